/* exercises.h: the functions chapter 7's exercises ask you to write. Each
 * lives in its own file in this folder (bubble.c, balanced_cut.c,
 * split_bytes.c, schedule_memory.c); edit that file, then run `make exercises` from the top
 * of the repository. Reference answers are in solutions/. */
#ifndef LAB07_EXERCISES_H
#define LAB07_EXERCISES_H

#include <stdbool.h>

/* Exercise bubble, part 1: GPipe's bubble, the fraction of a step each of
 * `stages` equal stages is idle when the batch flows through them as
 * `micro_batches` micro-batches (forward, then backward). */
double my_bubble(int stages, int micro_batches);

/* One op of a trace: the device it ran on, when it started and how long
 * it ran, in milliseconds, and its name ("micro_batch_0/model/stage_0/conv_1/Conv2D"). */
typedef struct {
    const char *device, *name;
    double start_ms, duration_ms;
} op_time;

/* Exercise bubble, part 2: the fraction of the trace's span (from the
 * first op on any device to the end of the last) during which `device` ran
 * no op. Ops of one device do not overlap. */
double my_idle_fraction(const op_time *ops, int nops, const char *device);

/* Exercise balanced-cut: layers[0..nlayers) are the model's layers in
 * order ("conv_1", ...); an op belongs to the layer whose name appears in
 * its name. Sum each layer's time over ops, then return k, the number of
 * layers the first of two stages should hold (layers [0,k) on one device,
 * [k,nlayers) on the other; 1 <= k < nlayers), so that the slower stage is
 * as fast as it can be. */
int my_balanced_cut(const op_time *ops, int nops, const char *const *layers, int nlayers);

/* Exercise split-bytes: the bytes one training step copies between two
 * devices when a dense layer's matrix multiply, x [batch,in] times
 * W [in,out] in float32, is split in two: by columns (each device holds
 * W's columns for half of the outputs; x goes to the second device, and
 * its half of y comes back) or by rows (each holds half of W's rows; half
 * of x's features go to the second device, its partial product [batch,out]
 * comes back). Count the forward and the backward pass: the gradients
 * cross the same edges, the other way, with the same sizes. */
long my_column_split_bytes(int batch, int in, int out);
long my_row_split_bytes(int batch, int in, int out);

/* Then two layers, x [batch,in] times W1 [in,hidden], then times
 * W2 [hidden,out] (a nonlinearity between them, on each device's half):
 * Megatron-LM's pair, W1 by columns and W2 by rows, so that each device
 * keeps its half of the hidden layer; and the two layers split alone, W1 by
 * columns (its halves joined on the first device) and then W2 by rows. */
long my_pair_split_bytes(int batch, int in, int hidden, int out);
long my_separate_split_bytes(int batch, int in, int hidden, int out);

/* Exercise schedule-memory: the most bytes stage s (0 <= s < stages) holds
 * at once when the batch flows through as micro_batches micro-batches. Each
 * micro-batch's forward pass leaves `activations` bytes on the stage, its
 * input's `input` bytes among them, until its backward pass through the
 * stage frees them. GPipe (one_f_one_b false) runs every forward pass
 * before the backward passes; 1F1B starts micro-batch m on stage s only once
 * m - (stages - s) has gone back through it. With recompute, a stage keeps
 * only each micro-batch's input and rebuilds one micro-batch's activations
 * at a time, just before its backward pass. */
double my_held_bytes(int stages, int micro_batches, int s, double activations, double input, bool one_f_one_b,
                     bool recompute);

#endif
