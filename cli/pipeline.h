/* cli_pipeline_run: a stream's pieces through the array, several at once
 * (pipeline.c says how). */
#ifndef URAID_CLI_PIPELINE_H
#define URAID_CLI_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#define CLI_PIPELINE_MAX 16

struct cli_piece {
    uint8_t *buf; /* piece bytes, 4 KiB aligned, owned by the worker */
    size_t len;   /* bytes in this piece; claim sets 0 at the end */
    uint64_t at;  /* its array offset */
    uint64_t seq; /* its place in the stream */
};

/* Each callback returns 0, or a nonzero exit status with a message in why
 * (empty: stop without a message). */
struct cli_pipeline {
    const char *verb; /* for messages */
    int workers;
    size_t piece;     /* the size of each worker's buffer */
    void *ctx;
    /* the next piece: its place, and for writes its bytes; under the lock */
    int (*claim)(void *ctx, struct cli_piece *pc, char *why, size_t whylen);
    /* the piece's array I/O, while the others do theirs */
    int (*work)(void *ctx, struct cli_piece *pc, char *why, size_t whylen);
    /* in stream order, one at a time (NULL: nothing to do) */
    int (*emit)(void *ctx, struct cli_piece *pc, char *why, size_t whylen);
};

/* 0, or the first failure's status (its message already printed). */
int cli_pipeline_run(const struct cli_pipeline *p);

#endif
