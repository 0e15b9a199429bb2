/* bench_tls.h: chapter 4's "Securing a cluster" in the bench: chapter 3's
 * cluster command with the shared secret and TLS 1.3 on every connection,
 * certificates made for the run (tests/make_test_certs.sh). */
#ifndef FLOWLAB_BENCH_TLS_H
#define FLOWLAB_BENCH_TLS_H

/* plain with the flags of a secured cluster appended (they go to the task
 * program, so plain must end with its arguments); NULL, after a note, when
 * the certificates cannot be made. */
const char *bench_tls_command(const char *plain);

#endif
