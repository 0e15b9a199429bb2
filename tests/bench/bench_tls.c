/* bench_tls.c: the command of a secured chapter 3 cluster for the bench's
 * TLS row (bench_tls.h): certificates and a secret made once per bench run
 * in build/bench/tls, their flags after the task program's own; and the
 * row's spread over rounds, in images/sec and in CPU time. */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench_tls.h"

#define TLS_DIR "build/bench/tls"

static int write_secret(const char *path)
{
    static const char secret[] = "a secret for the bench's secured cluster\n";
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -1;
    int rc = write(fd, secret, sizeof secret - 1) == (ssize_t)(sizeof secret - 1) ? 0 : -1;
    close(fd);
    return rc;
}

const char *bench_tls_command(const char *plain)
{
    static char command[2048];
    if (system("sh tests/make_test_certs.sh " TLS_DIR) != 0 || write_secret(TLS_DIR "/secret") != 0) {
        printf("  note: no TLS row: tests/make_test_certs.sh could not make certificates (is openssl installed?)\n");
        return NULL;
    }
    snprintf(command, sizeof command, "%s --cluster_secret_file=" TLS_DIR "/secret --tls_cert=" TLS_DIR
             "/task.pem --tls_key=" TLS_DIR "/task.key --tls_ca=" TLS_DIR "/ca.pem", plain);
    return command;
}

double bench_children_cpu_seconds(void)
{
    struct rusage used;
    if (getrusage(RUSAGE_CHILDREN, &used) != 0)
        return NAN;
    return used.ru_utime.tv_sec + used.ru_stime.tv_sec + (used.ru_utime.tv_usec + used.ru_stime.tv_usec) / 1e6;
}

void bench_tls_note(const double *tls, const double *plain, const double *tls_cpu, const double *plain_cpu,
                    int rounds)
{
    double lo = INFINITY, hi = -INFINITY, cpu_lo = INFINITY, cpu_hi = -INFINITY;
    for (int r = 0; r < rounds; r++) {
        double ratio = tls[r] / plain[r], more_cpu = 100.0 * (tls_cpu[r] / plain_cpu[r] - 1.0);
        lo = fmin(lo, ratio), hi = fmax(hi, ratio);
        cpu_lo = fmin(cpu_lo, more_cpu), cpu_hi = fmax(cpu_hi, more_cpu);
    }
    printf("  ch4 TLS, each of %d alternating rounds: %.2f-%.2fx plain TCP's images/sec, %.0f-%.0f%% more CPU time "
           "(user + system, every task of the run)\n", rounds, lo, hi, cpu_lo, cpu_hi);
}
