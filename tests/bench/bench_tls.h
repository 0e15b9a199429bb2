/* bench_tls.h: chapter 4's "Securing a cluster" in the bench: chapter 3's
 * cluster command with the shared secret and TLS 1.3 on every connection,
 * certificates made for the run (tests/make_test_certs.sh). */
#ifndef FLOWLAB_BENCH_TLS_H
#define FLOWLAB_BENCH_TLS_H

/* plain with the flags of a secured cluster appended (they go to the task
 * program, so plain must end with its arguments); NULL, after a note, when
 * the certificates cannot be made. */
const char *bench_tls_command(const char *plain);

/* The CPU time (user + system, seconds) of every child this process has
 * waited for, grandchildren the children waited for included: the
 * difference across one run is that run's CPU time, all its tasks'. */
double bench_children_cpu_seconds(void);

/* Prints the TLS row's spread: per round, TLS's images/sec over plain TCP's
 * and how much more CPU time the whole secured run took (the same steps, so
 * the same work but for TLS and the handshakes). */
void bench_tls_note(const double *tls, const double *plain, const double *tls_cpu, const double *plain_cpu,
                    int rounds);

#endif
