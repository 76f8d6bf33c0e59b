/* One exchange of the libcurl backend, bounded in time (xfer.h).
 *
 * The answer's deadline needs the multi interface: curl_easy_perform only
 * has a timeout for the whole transfer (the data timeout, seconds, meant
 * for a large view on a slow link) and calls a progress callback about
 * once a second when idle, too coarse for a 150 ms limit. */
#include <errno.h>
#include <time.h>

#include "xfer.h"

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int blank(const char *p, size_t n)
{
    return (n == 2 && p[0] == '\r' && p[1] == '\n') || (n == 1 && p[0] == '\n');
}

static size_t on_header(char *p, size_t sz, size_t nm, void *u)
{
    mfs_rx *x = u;
    size_t n = sz * nm;
    x->answered = 1;
    if (!x->sink || !blank(p, n))
        return n;
    /* the end of one answer's headers: a 2xx's declared length is judged
     * before any of its body is read (a 1xx or an error has none we keep) */
    long code = 0;
    curl_off_t len = -1;
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
    if (code < 200 || code >= 300 ||
        curl_easy_getinfo(x->h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &len) != CURLE_OK || len <= 0)
        return n;
    if (x->sink->declared(x->sink->ctx, (uint64_t)len) == 0)
        return n;
    x->stopped = 1;
    return 0; /* 0 ends the transfer */
}

static size_t on_body(char *p, size_t sz, size_t nm, void *u)
{
    mfs_rx *x = u;
    size_t n = sz * nm;
    if (!x->sink)
        return 0;
    if (x->sink->write(x->sink->ctx, p, n) < 0) {
        x->stopped = 1;
        return 0;
    }
    x->n += n;
    return n;
}

void mfs_rx_attach(CURL *h, mfs_rx *x)
{
    x->h = h;
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
}

CURLcode mfs_rx_perform(CURL *h, mfs_rx *x, unsigned answer_ms, int *late)
{
    *late = 0;
    CURLM *m = curl_multi_init();
    if (!m)
        return CURLE_OUT_OF_MEMORY;
    if (curl_multi_add_handle(m, h) != CURLM_OK) {
        curl_multi_cleanup(m);
        return CURLE_FAILED_INIT;
    }
    int64_t t0 = mono_ms();
    CURLcode cc = CURLE_OK;
    for (;;) {
        int running = 0;
        if (curl_multi_perform(m, &running) != CURLM_OK) {
            cc = CURLE_FAILED_INIT;
            break;
        }
        if (!running) {
            CURLMsg *msg;
            int left;
            while ((msg = curl_multi_info_read(m, &left)))
                if (msg->msg == CURLMSG_DONE)
                    cc = msg->data.result;
            break;
        }
        int wait = 1000; /* libcurl shortens it to its own timers */
        curl_off_t sent_us = 0; /* from the start; 0 until the request goes */
        if (!x->answered && curl_easy_getinfo(h, CURLINFO_PRETRANSFER_TIME_T, &sent_us) == CURLE_OK &&
            sent_us > 0) {
            int64_t left = sent_us / 1000 + (int64_t)answer_ms - (mono_ms() - t0);
            if (left <= 0) {
                *late = 1;
                cc = CURLE_OPERATION_TIMEDOUT;
                break; /* removing the handle closes its connection */
            }
            if (left < wait)
                wait = (int)left;
        }
        if (curl_multi_poll(m, NULL, 0, wait, NULL) != CURLM_OK) {
            cc = CURLE_FAILED_INIT;
            break;
        }
    }
    curl_multi_remove_handle(m, h);
    curl_multi_cleanup(m);
    return cc;
}
