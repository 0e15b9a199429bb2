/* cluster_security.c: who may talk to a cluster's tasks. A shared secret,
 * read from a file only its owner can read, which every connection proves
 * both ways (handshake.c); and, on request, TLS 1.3 with certificates that
 * both ends verify against the cluster's CA. Both are settings of the
 * cluster, so every connection it opens or accepts uses them. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "cluster_security.h"
#include "distributed_runtime/ps/cluster_state.h"

#define MIN_SECRET_BYTES 16

/* The file's bytes into out, its trailing newline and spaces dropped; the
 * length, or -1 after fl_set_error_code. At most one byte over the limit is
 * read, into a buffer that holds it, so a file that grew after fstat is
 * refused too. */
static long read_secret(int fd, const char *path, unsigned char out[FL_MAX_SECRET_BYTES])
{
    const size_t cap = FL_MAX_SECRET_BYTES;
    unsigned char bytes[FL_MAX_SECRET_BYTES + 1];
    size_t len = 0;
    ssize_t n = 0;
    while (len < sizeof bytes && (n = read(fd, bytes + len, sizeof bytes - len)) > 0)
        len += (size_t)n;
    if (n < 0) {
        fl_set_error_code(fl_errno_code(errno), "cannot read cluster secret file %s: %s", path, strerror(errno));
        return -1;
    }
    if (len > cap) {
        OPENSSL_cleanse(bytes, sizeof bytes);
        fl_set_error_code(FL_INVALID_ARGUMENT, "cluster secret file %s is over %zu bytes: is it the right file?",
                          path, cap);
        return -1;
    }
    while (len > 0 && (bytes[len - 1] == '\n' || bytes[len - 1] == '\r' || bytes[len - 1] == ' '))
        len--;
    memcpy(out, bytes, len);
    OPENSSL_cleanse(bytes, sizeof bytes);
    if (len < MIN_SECRET_BYTES) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "cluster secret file %s holds %zu bytes; a secret needs at least %d "
                          "(launch_cluster writes 32 random bytes as hex)", path, len, MIN_SECRET_BYTES);
        return -1;
    }
    return (long)len;
}

/* Only a regular file of this user's, that no one else may read or change,
 * and no bigger than a secret may be: refused otherwise, saying why. */
static int check_private(int fd, const char *path)
{
    const size_t cap = FL_MAX_SECRET_BYTES;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "cluster secret file %s is not a regular file (a FIFO, device or "
                          "directory?); give a file of its own, made by launch_cluster or with mode 600", path);
        return -1;
    }
    if (st.st_uid != geteuid()) {
        fl_set_error_code(FL_PERMISSION_DENIED, "cluster secret file %s belongs to user %u, not to this user (%u): "
                          "anyone who can change it holds the cluster; use a file of your own (chown, or copy it "
                          "with mode 600)", path, (unsigned)st.st_uid, (unsigned)geteuid());
        return -1;
    }
    if (st.st_mode & (S_IRWXG | S_IRWXO)) {
        fl_set_error_code(FL_PERMISSION_DENIED, "cluster secret file %s can be read or changed by others (mode "
                          "0%03o), so it is no secret; make it its owner's alone: chmod 600 %s",
                          path, (unsigned)(st.st_mode & 0777), path);
        return -1;
    }
    if (st.st_size > (off_t)cap) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "cluster secret file %s is over %zu bytes (%lld): is it the right "
                          "file?", path, cap, (long long)st.st_size);
        return -1;
    }
    return 0;
}

/* The file, opened without following a last symbolic link and without
 * blocking (a FIFO would wait for a writer for ever); -1 after
 * fl_set_error_code. */
static int open_secret(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    if (fd >= 0)
        return fd;
    if (errno == ELOOP)
        fl_set_error_code(FL_PERMISSION_DENIED, "cluster secret file %s is a symbolic link, which is refused "
                          "(whoever can change the link chooses the secret); give the file it names", path);
    else
        fl_set_error_code(fl_errno_code(errno), "cannot open cluster secret file %s: %s", path, strerror(errno));
    return -1;
}

int fl_cluster_set_secret_file(fl_cluster *c, const char *path)
{
    if (!c || !path || !*path) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_cluster_set_secret_file: %s", c ? "no file given" : "the cluster "
                          "is NULL");
        return -1;
    }
    int fd = open_secret(path);
    if (fd < 0)
        return -1;
    fl_cluster_state *r = fl_cluster_state_of(c);
    long len = check_private(fd, path) == 0 ? read_secret(fd, path, r->secret) : -1;
    close(fd);
    r->secret_len = len > 0 ? (size_t)len : 0;
    return len > 0 ? 0 : -1;
}

/* OpenSSL's reason for the last failure, or what was being done. */
static const char *openssl_reason(char *buf, size_t len)
{
    unsigned long e = ERR_get_error();
    ERR_clear_error();
    if (!e)
        return "no reason given";
    ERR_error_string_n(e, buf, len);
    return buf;
}

/* The flag whose file OpenSSL would not take (and *file), or NULL when all loaded. */
static const char *load_files(SSL_CTX *ctx, const char *cert, const char *key, const char *ca, const char **file)
{
    *file = cert;
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1)
        return "--tls_cert";
    *file = key;
    if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 || SSL_CTX_check_private_key(ctx) != 1)
        return "--tls_key";
    *file = ca;
    if (SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1)
        return "--tls_ca";
    return NULL;
}

/* TLS 1.3 only, this task's certificate, and the peer's required and
 * checked against the cluster's CA, on both sides. */
static SSL_CTX *tls_context(bool server, const char *cert, const char *key, const char *ca)
{
    char reason[256];
    SSL_CTX *ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
    if (!ctx || SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1) {
        fl_set_error_code(FL_INTERNAL, "OpenSSL cannot make a TLS 1.3 context: %s",
                          openssl_reason(reason, sizeof reason));
        SSL_CTX_free(ctx);
        return NULL;
    }
    const char *file, *flag = load_files(ctx, cert, key, ca, &file);
    if (flag) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "%s %s: %s (PEM files: the task's certificate, its key, the "
                          "cluster's CA)", flag, file, openssl_reason(reason, sizeof reason));
        SSL_CTX_free(ctx);
        return NULL;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    return ctx;
}

int fl_cluster_set_tls(fl_cluster *c, const char *cert, const char *key, const char *ca)
{
    if (!c) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_cluster_set_tls: the cluster is NULL");
        return -1;
    }
    if (!cert || !key || !ca || !*cert || !*key || !*ca) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "TLS needs all three of --tls_cert, --tls_key and --tls_ca");
        return -1;
    }
    SSL_CTX *client = tls_context(false, cert, key, ca);
    SSL_CTX *server = client ? tls_context(true, cert, key, ca) : NULL;
    if (!server) {
        SSL_CTX_free(client);
        return -1;
    }
    fl_cluster_state *r = fl_cluster_state_of(c);
    SSL_CTX_free(r->tls_client);
    SSL_CTX_free(r->tls_server);
    r->tls_client = client;
    r->tls_server = server;
    return 0;
}

int fl_cluster_allow_insecure_listen(fl_cluster *c, bool allow)
{
    if (!c) {
        fl_set_error_code(FL_INVALID_ARGUMENT, "fl_cluster_allow_insecure_listen: the cluster is NULL");
        return -1;
    }
    fl_cluster_state_of(c)->insecure_listen = allow;
    return 0;
}

const unsigned char *fl_cluster_secret(const fl_cluster *c, size_t *len)
{
    fl_cluster_state *r = fl_cluster_state_of(c);
    *len = r->secret_len;
    return r->secret_len ? r->secret : NULL;
}

struct ssl_ctx_st *fl_cluster_tls(const fl_cluster *c, bool server)
{
    fl_cluster_state *r = fl_cluster_state_of(c);
    return server ? r->tls_server : r->tls_client;
}
