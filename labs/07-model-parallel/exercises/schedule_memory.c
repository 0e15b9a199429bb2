/* schedule_memory.c: exercise schedule-memory. Write my_held_bytes (see
 * exercises.h).
 *
 * Hints: count the micro-batches a stage holds at once, those whose forward
 * pass went through it and whose backward pass has not. Under GPipe that is
 * every one; under 1F1B, how many can stage s have started before the
 * first one comes back? With recomputation, what is left of each of them,
 * and what is rebuilt?
 *
 * Questions the check cannot ask: (1) The first stage of the lab's CNN
 * (--split layers) holds, per image, conv_1's output (28 x 28 x 32 floats),
 * the pooled 14 x 14 x 32, conv_2's output 14 x 14 x 64 and the pooled
 * 7 x 7 x 64, and its input of 28 x 28. With my_held_bytes, predict its
 * peak at M = 8 micro-batches of 64 under GPipe, 1F1B and GPipe with
 * recomputation. (2) Run the chapter's command, model_parallel --split
 * layers --micro_batches 8 --batch_size 512 with --schedule 1f1b or
 * --recompute, and read /gpu:0 on its memory line. Which of your three
 * predictions is closest, and what does the session hold that your count
 * leaves out? Name two kinds of value. (3) Recomputation saved the most
 * memory here. What did it cost? Compare the images/sec of the three runs.
 *
 * Check your work: make exercises */
#include "exercises.h"

double my_held_bytes(int stages, int micro_batches, int s, double activations, double input, bool one_f_one_b,
                     bool recompute)
{
    (void)stages, (void)micro_batches, (void)s, (void)activations, (void)input, (void)one_f_one_b, (void)recompute;
    return -1; /* TODO: your code here */
}
