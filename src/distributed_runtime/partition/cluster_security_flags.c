/* cluster_security_flags.c: the flags that secure a cluster, read in one
 * place for every program: --cluster_secret_file (or its environment
 * variable), --tls_cert, --tls_key, --tls_ca and --insecure_listen. */
#include <stdlib.h>
#include <string.h>

#include "flowlab_cluster.h"
#include "runtime.h"

bool fl_cluster_security_flag(fl_cluster_security_flags *f, const char *flag, const char *value)
{
    if (strcmp(flag, "--cluster_secret_file") == 0)
        f->secret_file = value;
    else if (strcmp(flag, "--tls_cert") == 0)
        f->tls_cert = value;
    else if (strcmp(flag, "--tls_key") == 0)
        f->tls_key = value;
    else if (strcmp(flag, "--tls_ca") == 0)
        f->tls_ca = value;
    else
        return false;
    return true;
}

bool fl_cluster_security_switch(fl_cluster_security_flags *f, const char *arg)
{
    static const char name[] = "--insecure_listen";
    if (strncmp(arg, name, sizeof name - 1) != 0)
        return false;
    const char *rest = arg + sizeof name - 1;
    if (*rest == '\0' || strcmp(rest, "=true") == 0)
        f->insecure_listen = true;
    else if (strcmp(rest, "=false") == 0)
        f->insecure_listen = false;
    else
        return false;
    return true;
}

int fl_cluster_apply_security(fl_cluster *cluster, const fl_cluster_security_flags *f)
{
    const char *secret = f->secret_file, *from = "--cluster_secret_file";
    if (!secret || !*secret) {
        secret = getenv("FLOWLAB_CLUSTER_SECRET_FILE");
        from = "FLOWLAB_CLUSTER_SECRET_FILE";
    }
    if (secret && *secret && fl_cluster_set_secret_file(cluster, secret) != 0) {
        fl_prefix_error("%s: ", from);
        return -1;
    }
    if (f->insecure_listen)
        fl_cluster_allow_insecure_listen(cluster, true);
    bool any_tls = f->tls_cert || f->tls_key || f->tls_ca;
    return any_tls ? fl_cluster_set_tls(cluster, f->tls_cert, f->tls_key, f->tls_ca) : 0;
}
