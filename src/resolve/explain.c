/* What a view's key is made of, and why a lookup would miss it
 * (include/meshfs/views.h, "explain").  The resolver's own recipe (mfs_views_key,
 * mfs_views_manifest_key) on what the cache holds, looked at without being
 * used: an explanation never changes what it explains. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshfs/cache.h"
#include "meshfs/import.h"
#include "meshfs/util.h"
#include "meshfs/settings.h"
#include "meshfs/views.h"

static const char *kind_name(int kind)
{
    static const char *const names[] = {"file", "absent", "searched", "missing", "unreadable"};
    return kind >= 0 && kind <= MFS_DEP_UNREADABLE ? names[kind] : "?";
}

static const char *how_changed(const mfs_views_host *h, const mfs_dep *d)
{
    switch (d->kind) {
    case MFS_DEP_FILE: return mfs_input_absent(h->rootfd, d->path) == 1 ? "gone" : "changed";
    case MFS_DEP_ABSENT:
    case MFS_DEP_MISSING: return "there now";
    case MFS_DEP_LISTING: return "other names match now";
    default: return "its stat changed";
    }
}

static void hex(const uint8_t *b, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", b[i]);
}

static int copy_inputs(const mfs_views_host *h, const mfs_cache_manifest *man, mfs_explain *e)
{
    e->inputs = calloc(man->ndeps ? man->ndeps : 1, sizeof *e->inputs);
    if (!e->inputs)
        return -1;
    for (uint32_t i = 0; i < man->ndeps; i++) {
        const mfs_dep *d = &man->deps[i];
        mfs_explain_input *in = &e->inputs[e->ninputs++];
        in->path = strdup(d->path);
        if (!in->path)
            return -1;
        in->kind = d->kind;
        in->size = d->size;
        memcpy(in->hash, d->hash, 16);
        mfs_err err;
        int r = mfs_cache_dep_current(h->cache, h->rootfd, d, &err);
        in->now = r == 1 ? "same" : r == 0 ? how_changed(h, d) : "unknown";
        if (r != 1 && !e->miss[0])
            snprintf(e->miss, sizeof e->miss, "input '%s' (%s) changed since the last conversion: %s",
                     d->path, kind_name(d->kind), in->now);
    }
    return 0;
}

/* What the cache holds under each view's key, for the inputs the entry
 * records (which are the current ones when e->miss is still empty). */
static void look_at_views(mfs_views *v, const mfs_cache_manifest *man, const mfs_cache_key *mk,
                          const char *fmi_model, mfs_explain *e)
{
    const mfs_views_host *h = mfs_views_host_of(v);
    for (int f = 0; f < MFS_FMT_COUNT; f++) {
        if (!(h->formats & (1u << f)))
            continue;
        mfs_explain_view *w = &e->views[e->nviews++];
        w->format = mfs_format_get((mfs_format)f)->name;
        h->format_options(h->ctx, f, fmi_model, w->options, sizeof w->options);
        w->state = "unknown";
        mfs_cache_key k;
        mfs_err err;
        if (!man || mfs_views_key(v, man->deps, man->ndeps, f, fmi_model, &k, &err) < 0)
            continue;
        mfs_cache_key_hex(&k, w->key);
        mfs_cache_hit hit = {.fd = -1};
        if (mfs_cache_peek_in(h->cache, mk, &k, &hit, &err) == 1) {
            w->state = "embedded";
            w->size = hit.length;
        } else if (mfs_cache_peek(h->cache, &k, &hit, &err) == 1) {
            w->state = hit.reason ? "failed" : "entry";
            w->size = hit.reason ? 0 : hit.length;
            w->reason = hit.reason ? strdup(hit.reason) : NULL;
        } else {
            w->state = "not in the cache";
            if (!e->miss[0])
                snprintf(e->miss, sizeof e->miss,
                         "the inputs are as recorded, but no .%s is in the cache under its key "
                         "(evicted, or never made with these options)",
                         w->format);
        }
        mfs_cache_hit_release(&hit);
    }
}

/* What the settings files beside the model set, read where they lie with
 * the owner rule the worker applies (the model's owner or root), so the
 * lines say what a conversion now would apply.  Their contents are no
 * secret from whoever may read the views: they decide those bytes. */
static int describe_settings(const mfs_views_host *h, const char *model, unsigned uid, mfs_explain *e)
{
    mfs_settings *s = malloc(sizeof *s);
    if (!s)
        return -1;
    mfs_settings_init(s);
    mfs_err err;
    int root = h->rootfd;
    if (mfs_settings_load(model, uid, mfs_settings_read_beneath, &root, s, &err) == 0) {
        char text[8192];
        mfs_settings_describe(s, text, sizeof text);
        e->settings = strdup(text);
    } else {
        snprintf(e->settings_error, sizeof e->settings_error, "%s", err.msg);
    }
    int oom = e->settings == NULL && !e->settings_error[0];
    free(s);
    return oom ? -1 : 0;
}

int mfs_views_explain(mfs_views *v, const char *model, const char *fmi_model, mfs_explain *e, mfs_err *err)
{
    memset(e, 0, sizeof *e);
    const mfs_views_host *h = mfs_views_host_of(v);
    e->model = strdup(model);
    if (!e->model)
        return mfs_errf(err, "out of memory");
    e->version = h->version;
    h->import_options(h->ctx, e->import_options, sizeof e->import_options);
    struct stat st;
    if (h->hash_model(h->ctx, model, &st, e->hash, err) < 0)
        return mfs_err_prefix(err, "%s", model);
    e->size = (uint64_t)st.st_size;
    if (describe_settings(h, model, (unsigned)st.st_uid, e) < 0)
        return mfs_errf(err, "out of memory");
    mfs_cache_key mk;
    if (mfs_views_manifest_key(v, model, e->size, e->hash, &mk, err) < 0)
        return -1;
    mfs_cache_key_hex(&mk, e->entry_key);
    mfs_cache_manifest man = {0};
    mfs_err perr;
    e->have_entry = mfs_cache_manifest_peek(h->cache, &mk, &man, &perr) == 1;
    if (!e->have_entry) {
        char hx[33];
        hex(e->hash, 16, hx);
        snprintf(e->miss, sizeof e->miss,
                 "no model entry for the model's bytes now (%llu bytes, XXH3-128 %s) with these options "
                 "and version: new to this cache, edited since its last conversion, or evicted",
                 (unsigned long long)e->size, hx);
        look_at_views(v, NULL, &mk, fmi_model, e);
        return 0;
    }
    if (!mfs_views_shows_image(v)) /* as the resolver checks them */
        mfs_cache_manifest_drop_texture_inputs(&man);
    int rc = copy_inputs(h, &man, e);
    if (rc == 0)
        look_at_views(v, &man, &mk, fmi_model, e);
    mfs_cache_manifest_free(&man);
    return rc < 0 ? mfs_errf(err, "out of memory") : 0;
}

void mfs_explain_free(mfs_explain *e)
{
    for (uint32_t i = 0; i < e->ninputs; i++)
        free(e->inputs[i].path);
    free(e->inputs);
    for (int i = 0; i < e->nviews; i++)
        free(e->views[i].reason);
    free(e->model);
    free(e->settings);
    memset(e, 0, sizeof *e);
}

void mfs_explain_print(FILE *f, const mfs_explain *e)
{
    char hx[33];
    hex(e->hash, 16, hx);
    fprintf(f, "model %s: %llu bytes, XXH3-128 %s\n", e->model, (unsigned long long)e->size, hx);
    fprintf(f, "  import options \"%s\", version %s\n", e->import_options, e->version);
    fprintf(f, "  model entry %s: %s\n", e->entry_key, e->have_entry ? "in the cache" : "not in the cache");
    if (e->ninputs)
        fprintf(f, "inputs (as its last conversion recorded them):\n");
    for (uint32_t i = 0; i < e->ninputs; i++) {
        const mfs_explain_input *in = &e->inputs[i];
        fprintf(f, "  %-10s %s", kind_name(in->kind), in->path);
        if (in->kind == MFS_DEP_FILE || in->kind == MFS_DEP_UNREADABLE || in->kind == MFS_DEP_LISTING) {
            hex(in->hash, 16, hx);
            fprintf(f, in->kind == MFS_DEP_LISTING ? "  %llu names, %s" : "  %llu bytes, %s",
                    (unsigned long long)in->size, hx);
        }
        fprintf(f, "  [%s]\n", in->now);
    }
    if (e->settings && !e->settings[0])
        fprintf(f, "settings: none (mount and command-line options)\n");
    else if (e->settings) {
        fprintf(f, "settings (from the files beside the model):\n");
        for (const char *l = e->settings; *l;) {
            const char *nl = strchr(l, '\n');
            int len = nl ? (int)(nl - l) : (int)strlen(l);
            fprintf(f, "  %.*s\n", len, l);
            l += len + (nl != NULL);
        }
    }
    else
        fprintf(f, "settings: %s\n", e->settings_error);
    fprintf(f, "views:\n");
    for (int i = 0; i < e->nviews; i++) {
        const mfs_explain_view *w = &e->views[i];
        fprintf(f, "  %-4s key %s, options \"%s\": %s", w->format, w->key[0] ? w->key : "(unknown)",
                w->options, w->state);
        if (w->size)
            fprintf(f, ", %llu bytes", (unsigned long long)w->size);
        if (w->reason)
            fprintf(f, ": %s", w->reason);
        fputc('\n', f);
    }
    fprintf(f, "a lookup now: %s\n", e->miss[0] ? e->miss : "served from the cache, no conversion");
}

void mfs_explain_print_json(FILE *f, const mfs_explain *e)
{
    char hx[33];
    hex(e->hash, 16, hx);
    fputs("{\"model\":", f);
    mfs_json_str(f, e->model);
    fprintf(f, ",\"size\":%llu,\"hash\":\"%s\",\"import_options\":", (unsigned long long)e->size, hx);
    mfs_json_str(f, e->import_options);
    fputs(",\"version\":", f);
    mfs_json_str(f, e->version);
    fprintf(f, ",\"entry_key\":\"%s\",\"entry\":%s,\"inputs\":[", e->entry_key, e->have_entry ? "true" : "false");
    for (uint32_t i = 0; i < e->ninputs; i++) {
        const mfs_explain_input *in = &e->inputs[i];
        hex(in->hash, 16, hx);
        fputs(i ? ",{\"path\":" : "{\"path\":", f);
        mfs_json_str(f, in->path);
        fprintf(f, ",\"kind\":\"%s\",\"size\":%llu,\"hash\":\"%s\",\"now\":\"%s\"}", kind_name(in->kind),
                (unsigned long long)in->size, hx, in->now);
    }
    fputs("],\"settings\":", f);
    mfs_json_str(f, e->settings);
    fputs(",\"settings_error\":", f);
    mfs_json_str(f, e->settings_error[0] ? e->settings_error : NULL);
    fputs(",\"views\":[", f);
    for (int i = 0; i < e->nviews; i++) {
        const mfs_explain_view *w = &e->views[i];
        fprintf(f, "%s{\"format\":\"%s\",\"key\":", i ? "," : "", w->format);
        mfs_json_str(f, w->key[0] ? w->key : NULL);
        fputs(",\"options\":", f);
        mfs_json_str(f, w->options);
        fprintf(f, ",\"state\":\"%s\",\"size\":%llu,\"reason\":", w->state, (unsigned long long)w->size);
        mfs_json_str(f, w->reason);
        fputc('}', f);
    }
    fputs("],\"miss\":", f);
    mfs_json_str(f, e->miss[0] ? e->miss : NULL);
    fputs("}\n", f);
}
