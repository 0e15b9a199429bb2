/* bench_tls.c: the command of a secured chapter 3 cluster for the bench's
 * TLS row (bench_tls.h): certificates and a secret made once per bench run
 * in build/bench/tls, their flags after the task program's own. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
