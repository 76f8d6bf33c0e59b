/* Is the remote slower than converting?  (Issue 35 item 7; docs/remote-
 * cache.md, "A server slower than converting".)
 *
 * The remote tier notes each download that moved enough bytes to say
 * something about throughput (MFS_PACE_MIN_BYTES: smaller ones measure
 * the round trip, not the link); the server's rate is the bytes over the
 * seconds of the last MFS_PACE_SAMPLES of them.  Before fetching a
 * model's views the resolver asks whether their bytes at that rate would
 * take longer than the model's last conversion took (recorded in its
 * model entry).  Past MFS_PACE_FACTOR times longer, it converts instead.
 *
 * A verdict of "slow" is not kept for good: once the newest sample is
 * MFS_PACE_PROBE_S old, the next fetch goes ahead (a probe) and its
 * transfer is measured, so a server that was slow for a moment (a busy
 * link, a backup) is used again once it is fast.  The clock is the
 * caller's (monotonic ns), so the rule is tested without waiting.  No
 * locking: the caller's. */
#ifndef MESHFS_REMOTE_PACE_INT_H
#define MESHFS_REMOTE_PACE_INT_H

#include <stdint.h>

#define MFS_PACE_SAMPLES 8
#define MFS_PACE_MIN_BYTES (64u << 10)
#define MFS_PACE_FACTOR 2.0
#define MFS_PACE_PROBE_S 60

typedef struct mfs_pace {
    uint64_t bytes[MFS_PACE_SAMPLES];
    int64_t ns[MFS_PACE_SAMPLES];
    unsigned n, next;   /* samples held, and the slot the next one takes */
    int64_t newest_ns;  /* when the newest was taken (the caller's clock) */
} mfs_pace;

typedef enum mfs_pace_verdict {
    MFS_PACE_FETCH,     /* no rate known, no conversion time, or not slower */
    MFS_PACE_SLOWER,    /* slower than converting, not clearly: fetched */
    MFS_PACE_CONVERT,   /* clearly slower: convert instead */
    MFS_PACE_PROBE,     /* clearly slower, but measured long ago: fetch to measure */
} mfs_pace_verdict;

/* A download of bytes (body) that took ns, finished at now_ns. */
void mfs_pace_note(mfs_pace *p, uint64_t bytes, int64_t ns, int64_t now_ns);
/* bytes/s over the samples held; 0 if none. */
double mfs_pace_rate(const mfs_pace *p);
/* Fetching bytes against converting in convert_ms (0: unknown).  *fetch_s
 * (may be NULL) gets the estimate, 0 if there is none. */
mfs_pace_verdict mfs_pace_judge(const mfs_pace *p, uint64_t bytes, uint64_t convert_ms,
                                int64_t now_ns, double *fetch_s);

#endif
