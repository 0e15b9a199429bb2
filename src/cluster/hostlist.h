/* hostlist.h: Slurm's compressed host lists ("n[1-3,7],login1"), expanded
 * into one name per host, for the cluster resolver that reads
 * SLURM_STEP_NODELIST (chapter 6: launching the way clusters do). */
#ifndef FLOWLAB_DIST_HOSTLIST_H
#define FLOWLAB_DIST_HOSTLIST_H

/* The most hosts one list may expand to: a typo such as n[1-100000000]
 * fails with a message instead of exhausting memory. */
#define FL_HOSTLIST_MAX_HOSTS 65536

/* Expands hostlist into *hosts (a new array of new strings, in the list's
 * order; free with fl_hostlist_free) and returns how many, or -1 with
 * fl_last_error() naming what is wrong. Accepted, as Slurm writes them:
 * names separated by commas; in a name, brackets of numbers and ranges
 * ("[1-3,7]"), zero-padded to the width of the range's first number
 * ("gpu[08-10]" -> gpu08 gpu09 gpu10), with text after them and several
 * brackets in one name ("r[1-2]n[1-2]" -> r1n1 r1n2 r2n1 r2n2). */
int fl_hostlist_expand(const char *hostlist, char ***hosts);
void fl_hostlist_free(char **hosts, int count);

#endif
