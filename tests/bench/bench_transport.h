/* bench_transport.h: chapter 3's transport row of `make bench`: a 13 MB
 * value from a ps task to a worker task, against a plain loopback socket. */
#ifndef FLOWLAB_BENCH_TRANSPORT_H
#define FLOWLAB_BENCH_TRANSPORT_H

/* Prints the row, measured in rounds; a note instead when a server does not start. */
void bench_transport(void);

#endif
