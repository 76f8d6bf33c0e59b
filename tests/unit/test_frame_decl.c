/* Reading declared units and up axes (src/import/frame_decl.c) from bytes
 * written here: the rules come from the formats (3MF core spec ST_Unit,
 * ASTM F2915 AMF units, OpenGEX Metric structures), the edge cases from
 * what real files contain (BOMs, comments, hexadecimal floats, prefixed
 * names, parts named in another case). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zip.h>

#include "../../src/import/frame_decl.h"

static int decl_amf(const char *text, mfs_decl *d, mfs_err *err)
{
    return mfs_decl_amf(text, strlen(text), d, err);
}

static int decl_ogex(const char *text, mfs_decl *d, mfs_err *err)
{
    return mfs_decl_ogex(text, strlen(text), d, err);
}

static void test_amf(void **state)
{
    mfs_decl d;
    mfs_err err;
    assert_int_equal(decl_amf("\xEF\xBB\xBF<?xml version=\"1.0\"?>\n<!-- <amf unit=\"meter\"> -->\n"
                              "<amf version=\"1.1\" unit = 'Inch'><object/></amf>", &d, &err), 0);
    assert_true(d.metres == 0.0254);
    assert_int_equal(d.zup, 1);
    assert_string_equal(d.unit, "Inch");
    assert_int_equal(decl_amf("<amf><object id=\"0\"/></amf>", &d, &err), 0);
    assert_true(d.metres == 1e-3); /* millimetres when absent */
    assert_string_equal(d.unit, "");
    assert_int_equal(decl_amf("<amf unit=\"feet\">", &d, &err), 0);
    assert_true(d.metres == 0.3048);
    assert_int_equal(decl_amf("<amf unit=\"parsec\">", &d, &err), -1);
    assert_non_null(strstr(err.msg, "AMF declares unit \"parsec\", which is not one of millimeter"));
    /* "foot" is 3MF's word, not AMF's */
    assert_int_equal(decl_amf("<amf unit=\"foot\">", &d, &err), -1);
}

static void test_ogex(void **state)
{
    mfs_decl d;
    mfs_err err;
    assert_int_equal(decl_ogex("", &d, &err), 0);
    assert_true(d.metres == 1.0);
    assert_int_equal(d.zup, 1); /* OpenGEX's default up is z */
    assert_int_equal(decl_ogex("Metric (key = \"distance\") {float {0.01}}\n"
                               "Metric (key = \"up\") {string {\"y\"}}\n", &d, &err), 0);
    assert_true(d.metres == 0.01);
    assert_int_equal(d.zup, 0);
    /* hexadecimal floats are the bits of a float; comments, strings and
     * nested structures do not count; keys may come in any spacing */
    assert_int_equal(decl_ogex("// Metric (key = \"distance\") {float {5}}\n"
                               "/* Metric (key = \"up\") {string {\"y\"}} */\n"
                               "GeometryNode $n { Name {string {\"} Metric (key = \\\"distance\\\")\"}}\n"
                               "  Metric (key = \"distance\") {float {7}} }\n"
                               "Metric(key=\"distance\"){float{0x3C23D70A}}\n", &d, &err), 0);
    float want = 0.01f;
    assert_true(d.metres == (double)want);
    assert_int_equal(d.zup, 1);
    assert_int_equal(decl_ogex("Metric $m (key = \"distance\") {double {2.54e-2}}", &d, &err), 0);
    assert_true(d.metres == 0.0254);
    assert_int_equal(decl_ogex("Metric (key = \"up\") {string {\"x\"}}", &d, &err), -1);
    assert_non_null(strstr(err.msg, "OpenGEX Metric \"up\" is \"x\": must be \"y\" or \"z\""));
    assert_int_equal(decl_ogex("Metric (key = \"distance\") {float {0}}", &d, &err), -1);
    assert_non_null(strstr(err.msg, "\"distance\" must be a positive number"));
    /* metrics this reader does not use are passed over */
    assert_int_equal(decl_ogex("Metric (key = \"angle\") {float {1}}", &d, &err), 0);
}

/* ---- 3MF: zip packages written with minizip's writer ---- */

typedef struct part {
    const char *name;
    const char *text;
} part;

static uint8_t *make_zip(const part *parts, int n, size_t *size)
{
    char path[] = "/tmp/meshfs-3mf-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    zipFile z = zipOpen64(path, APPEND_STATUS_CREATE);
    assert_non_null(z);
    for (int i = 0; i < n; i++) {
        zip_fileinfo zi;
        memset(&zi, 0, sizeof zi);
        assert_int_equal(zipOpenNewFileInZip64(z, parts[i].name, &zi, NULL, 0, NULL, 0, NULL,
                                               Z_DEFLATED, Z_DEFAULT_COMPRESSION, 1), ZIP_OK);
        assert_int_equal(zipWriteInFileInZip(z, parts[i].text, (unsigned)strlen(parts[i].text)), ZIP_OK);
        zipCloseFileInZip(z);
    }
    zipClose(z, NULL);
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    rewind(f);
    uint8_t *buf = malloc(*size);
    assert_int_equal(fread(buf, 1, *size, f), *size);
    fclose(f);
    unlink(path);
    return buf;
}

#define RELS(target)                                                                               \
    "<?xml version=\"1.0\"?><Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/" \
    "relationships\"><Relationship Id=\"t\" Target=\"/Metadata/thumb.png\" "                       \
    "Type=\"http://schemas.openxmlformats.org/package/2006/relationships/metadata/thumbnail\"/>"   \
    "<Relationship Target=\"" target "\" Id=\"r\" "                                              \
    "Type=\"http://schemas.microsoft.com/3dmanufacturing/2013/01/3dmodel\"/></Relationships>"

static void test_3mf(void **state)
{
    mfs_decl d;
    mfs_err err;
    size_t n;
    /* the model part is where _rels/.rels points, matched case-insensitively;
     * a prefixed root element still counts */
    part p1[] = {{"_rels/.rels", RELS("/3D/Other.model")},
                 {"3D/3dmodel.model", "<model unit=\"meter\"/>"},
                 {"3d/other.MODEL", "<?xml version=\"1.0\"?><m:model xmlns:m=\"x\" unit=\"centimeter\">"}};
    uint8_t *z = make_zip(p1, 3, &n);
    assert_int_equal(mfs_decl_3mf(z, n, &d, &err), 0);
    assert_true(d.metres == 1e-2);
    assert_int_equal(d.zup, 1);
    free(z);
    /* no relationship: the conventional part name; no unit: millimetres */
    part p2[] = {{"3D/3dmodel.model", "<model xml:lang=\"en-US\"><resources/></model>"}};
    z = make_zip(p2, 1, &n);
    assert_int_equal(mfs_decl_3mf(z, n, &d, &err), 0);
    assert_true(d.metres == 1e-3);
    free(z);
    part p3[] = {{"3D/3dmodel.model", "<model unit=\"furlong\">"}};
    z = make_zip(p3, 1, &n);
    assert_int_equal(mfs_decl_3mf(z, n, &d, &err), -1);
    assert_non_null(strstr(err.msg, "3MF model declares unit \"furlong\""));
    free(z);
    /* only the start of the part is read: a unit 100 KiB in is not seen,
     * whatever the element says after that */
    char *big = malloc(200000);
    strcpy(big, "<model");
    memset(big + 6, ' ', 150000);
    strcpy(big + 150006, "unit=\"inch\">");
    part p4[] = {{"3D/3dmodel.model", big}};
    z = make_zip(p4, 1, &n);
    assert_int_equal(mfs_decl_3mf(z, n, &d, &err), 0);
    assert_true(d.metres == 1e-3);
    free(z);
    free(big);
    /* not a zip at all, or a zip without the model part */
    assert_int_equal(mfs_decl_3mf((const uint8_t *)"PK\3\4 truncated", 15, &d, &err), -1);
    assert_non_null(strstr(err.msg, "3MF"));
    part p5[] = {{"_rels/.rels", RELS("/3D/missing.model")}};
    z = make_zip(p5, 1, &n);
    assert_int_equal(mfs_decl_3mf(z, n, &d, &err), -1);
    assert_non_null(strstr(err.msg, "cannot read model part '3D/missing.model'"));
    free(z);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_amf),
        cmocka_unit_test(test_ogex),
        cmocka_unit_test(test_3mf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
