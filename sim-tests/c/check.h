/* The checks of the C test programs: CHECK(cond, fmt, ...) counts a
 * failure and says where, naming the rank; each program sums `errors`
 * over the ranks at the end and prints OK only when it is 0. */
#ifndef DN_CHECK_H
#define DN_CHECK_H
#include <stdio.h>

static int errors = 0, rank, size;

#define CHECK(cond, ...)                                            \
    do {                                                            \
        if (!(cond)) {                                              \
            errors++;                                               \
            fprintf(stderr, "[%d] FAIL line %d: ", rank, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                           \
            fprintf(stderr, "\n");                                  \
        }                                                           \
    } while (0)

#endif
