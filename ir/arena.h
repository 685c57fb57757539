/* Arena allocation: a compilation owns one arena; everything the compiler makes
 * (tokens, AST, IR, strings) comes from it and is freed at once with it. */
#ifndef RNNCC_ARENA_H
#define RNNCC_ARENA_H
#include <stdarg.h>
#include <stddef.h>

typedef struct ArenaBlock ArenaBlock;
typedef struct Arena {
    ArenaBlock *head; /* newest block first */
    int failed;       /* set once an allocation has failed */
} Arena;

/* Initialises an empty arena (no memory is taken until the first allocation). */
void arena_init(Arena *a);
/* Frees every block of the arena; the arena may be reused after arena_init. */
void arena_free(Arena *a);
/* Returns n zeroed bytes aligned for any type, or NULL (and sets a->failed) when memory runs out. */
void *arena_alloc(Arena *a, size_t n);
/* Returns n zeroed elements of the given size, or NULL on overflow or when memory runs out. */
void *arena_array(Arena *a, size_t count, size_t size);
/* Copies n bytes of s into the arena and terminates them with NUL. */
char *arena_strndup(Arena *a, const char *s, size_t n);
/* Copies the NUL-terminated string s into the arena. */
char *arena_strdup(Arena *a, const char *s);
/* printf into a fresh arena string. */
char *arena_printf(Arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* vprintf into a fresh arena string. */
char *arena_vprintf(Arena *a, const char *fmt, va_list ap);

#endif
