/* The remote's measured pace against a conversion's (pace.h). */
#include "pace.h"

void mfs_pace_note(mfs_pace *p, uint64_t bytes, int64_t ns, int64_t now_ns)
{
    if (bytes < MFS_PACE_MIN_BYTES || ns <= 0)
        return;
    p->bytes[p->next] = bytes;
    p->ns[p->next] = ns;
    p->next = (p->next + 1) % MFS_PACE_SAMPLES;
    if (p->n < MFS_PACE_SAMPLES)
        p->n++;
    p->newest_ns = now_ns;
}

double mfs_pace_rate(const mfs_pace *p)
{
    double b = 0, s = 0;
    for (unsigned i = 0; i < p->n; i++) {
        b += (double)p->bytes[i];
        s += (double)p->ns[i] / 1e9;
    }
    return s > 0 ? b / s : 0;
}

mfs_pace_verdict mfs_pace_judge(const mfs_pace *p, uint64_t bytes, uint64_t convert_ms,
                                int64_t now_ns, double *fetch_s)
{
    double rate = mfs_pace_rate(p);
    double est = rate > 0 ? (double)bytes / rate : 0;
    if (fetch_s)
        *fetch_s = est;
    double conv = (double)convert_ms / 1000.0;
    if (!rate || !convert_ms || est <= conv)
        return MFS_PACE_FETCH;
    if (est <= conv * MFS_PACE_FACTOR)
        return MFS_PACE_SLOWER;
    if (now_ns - p->newest_ns >= (int64_t)MFS_PACE_PROBE_S * 1000000000)
        return MFS_PACE_PROBE;
    return MFS_PACE_CONVERT;
}
