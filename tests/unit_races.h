/* Static race checks of the persistent units' text (bench/NOTES.md sections 75-76): whether what a
 * block reads or overwrites between two grid barriers can be another block's element. They read the
 * emitted CUDA text, not the generator's rules, so they hold the generator to account. Each returns
 * 1 when its property holds; else 0 with *why naming the line; its counter counts what it checked.
 * Shared by check_codegen (a sweep of shipped and random cells) and the fuzz target fuzz_compile. */
#ifndef RNNCC_UNIT_RACES_H
#define RNNCC_UNIT_RACES_H
#include <stddef.h>

/* Does p open a step group's scope (`// K<k> over this block's units` on its line)? */
int unit_group_header(const char *p);

/* Forward: every value loaded before a step's hand-off is complete is a hoisted one or a state
 * element this block stored itself (the scope loading it runs over the storing group's length). */
int early_loads_own(const char *u, int *states, char *why, size_t why_size);
/* Forward: a step GEMM's result is read from shared memory only over its own rows, from global
 * memory so or after a barrier that followed the product. */
int results_read_own_rows(const char *u, int *reads, char *why, size_t why_size);
/* Forward (barrier units): nothing a product stages is stored between the same barriers, nor across
 * the loop's turn where state slots (two in inference) or a reused step buffer meet. */
int forward_staged_values_stay(const char *u, int *staged, char *why, size_t why_size);
/* Backward: what it fetches ahead is the forward's values or dy, and it stores no forward value. */
int backward_fetches_forward_values(const char *u, int *fetches, char *why, size_t why_size);
/* Backward: an adjoint stored and accessed with no barrier between is taken over the same length's
 * shares by both scopes, and no transposed product stages an adjoint stored between its barriers. */
int backward_adjoints_read_own(const char *u, int *reads, char *why, size_t why_size);

#endif
