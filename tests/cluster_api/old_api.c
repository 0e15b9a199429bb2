/* old_api.c: a program written for the previous API, which gave a session
 * what fl_cluster_session_plugin or fl_cluster_client_plugin lent:
 * tests/cluster_api.t checks that it does not build, the message naming the change. */
#include "flowlab.h"
#include "flowlab_cluster.h"

int main(void)
{
    fl_cluster *cluster = fl_cluster_from_flags("127.0.0.1:2222", "127.0.0.1:2223", "worker", 0);
    fl_session_options options = {.cluster = fl_cluster_session_plugin(cluster)};
    fl_session_options client = {.cluster = fl_cluster_client_plugin(cluster)};
    fl_session *s = fl_session_new(fl_graph_new(), &options), *c = fl_session_new(fl_graph_new(), &client);
    return s && c ? 0 : 1;
}
