"""The .tex view end to end: models and images the test writes itself (PNG
via zlib, uncompressed TGA and BMP, a .glb with an embedded PNG), converted
by meshfs-convert and read through a mount.

Expected bytes follow docs/formats/tex.md: TextureHeader {i32 w, h, depth;
u16 gpuFormat, imageFormat}, pixels with the bottom row first, RGB kept only
when a row is a multiple of 4 bytes (else RGBA, alpha 255), and the 1x1
opaque white RGBA texel when there is no usable texture."""
import json
import os
import shutil
import struct
import time
import unittest
import zlib

from common import TreeCase, convert, inspect, tempdir
from mount import Mount

FALLBACK = struct.pack("<iiiHH", 1, 1, 4, 3, 3) + b"\xff\xff\xff\xff"


# ---- images (rows given top-down, as pixels of 3 or 4 bytes) ----

def png(w, h, rows, channels):
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    ctype = 2 if channels == 3 else 6
    raw = b"".join(b"\x00" + r for r in rows)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, ctype, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def tga(w, h, rows):
    """24-bit uncompressed, bottom-left origin (rows stored bottom first, BGR)."""
    head = struct.pack("<BBBHHBHHHHBB", 0, 0, 2, 0, 0, 0, 0, 0, w, h, 24, 0)
    body = b"".join(bytes(b for i in range(0, len(r), 3) for b in (r[i + 2], r[i + 1], r[i]))
                    for r in reversed(rows))
    return head + body


def bmp(w, h, rows):
    """24-bit BI_RGB: rows bottom first, BGR, each padded to 4 bytes."""
    pad = (4 - (w * 3) % 4) % 4
    body = b"".join(bytes(b for i in range(0, len(r), 3) for b in (r[i + 2], r[i + 1], r[i])) + b"\0" * pad
                    for r in reversed(rows))
    info = struct.pack("<IiiHHIIiiII", 40, w, h, 1, 24, 0, len(body), 2835, 2835, 0, 0)
    return b"BM" + struct.pack("<IHHI", 14 + 40 + len(body), 0, 0, 54) + info + body


def pixels(w, h, channels, seed):
    """Rows top-down with distinct bytes, so any reordering shows."""
    return [bytes((seed + 17 * y + 5 * x + c) % 251 for x in range(w) for c in range(channels))
            for y in range(h)]


def expected_tex(w, h, channels, rows):
    depth = 4 if channels == 4 or (w * 3) % 4 else 3
    fmt = 3 if depth == 4 else 0
    out = struct.pack("<iiiHH", w, h, depth, fmt, fmt)
    for r in reversed(rows):
        if depth == channels:
            out += r
        else:
            out += b"".join(r[i:i + 3] + b"\xff" for i in range(0, len(r), 3))
    return out


# ---- models ----

OBJ = """mtllib {name}.mtl
v 0 0 0
v 1 0 0
v 0 1 0
vt 0 0
vt 1 0
vt 0 1
vn 0 0 1
usemtl skin
f 1/1/1 2/2/1 3/3/1
"""


def obj_model(folder, name, map_kd):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name + ".obj"), "w") as f:
        f.write(OBJ.format(name=name))
    with open(os.path.join(folder, name + ".mtl"), "w") as f:
        f.write("newmtl skin\nKd 1 1 1\n" + (f"map_Kd {map_kd}\n" if map_kd else ""))


def glb_model(path, image):
    pos = struct.pack("<9f", 0, 0, 0, 1, 0, 0, 0, 1, 0)
    uv = struct.pack("<6f", 0, 0, 1, 0, 0, 1)
    img = image + b"\0" * ((4 - len(image) % 4) % 4)
    binary = pos + uv + img
    gltf = {
        "asset": {"version": "2.0"},
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0, "TEXCOORD_0": 1}, "material": 0}]}],
        "materials": [{"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}],
        "textures": [{"source": 0}],
        "images": [{"bufferView": 2, "mimeType": "image/png"}],
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3",
             "min": [0, 0, 0], "max": [1, 1, 0]},
            {"bufferView": 1, "componentType": 5126, "count": 3, "type": "VEC2"},
        ],
        "bufferViews": [
            {"buffer": 0, "byteOffset": 0, "byteLength": len(pos)},
            {"buffer": 0, "byteOffset": len(pos), "byteLength": len(uv)},
            {"buffer": 0, "byteOffset": len(pos) + len(uv), "byteLength": len(image)},
        ],
        "buffers": [{"byteLength": len(binary)}],
    }
    js = json.dumps(gltf).encode()
    js += b" " * ((4 - len(js) % 4) % 4)
    body = (struct.pack("<I4s", len(js), b"JSON") + js + struct.pack("<I4s", len(binary), b"BIN\0") + binary)
    with open(path, "wb") as f:
        f.write(struct.pack("<4sII", b"glTF", 2, 12 + len(body)) + body)


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


class ConvertTex(unittest.TestCase):
    def setUp(self):
        self._tmp = tempdir()
        self.tmp = self._tmp.name
        self.src = os.path.join(self.tmp, "src")
        self.out = os.path.join(self.tmp, "out")
        os.makedirs(self.src)

    def tearDown(self):
        self._tmp.cleanup()

    def tex(self, model, *opts):
        """Converts src/<model> to .tex only; returns (bytes, report row, note)."""
        p, rows = convert([self.src], self.out, "-f", "tex", "--timeout", "30", *opts)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual([r["model"] for r in rows], [model])
        row = rows[0]
        self.assertTrue(row["outputs"]["tex"]["ok"], row)
        path = row["outputs"]["tex"]["path"]
        # every .tex meshfs writes passes the engine's checks
        self.assertTrue(inspect([path])[path]["ok"], inspect([path])[path])
        return read(path), row, row["outputs"]["tex"]["note"]

    def assert_fallback(self, model, reason):
        data, row, note = self.tex(model)
        self.assertEqual(data, FALLBACK)
        self.assertTrue(note.startswith("tex: " + reason), note)
        self.assertTrue(note.endswith("; wrote the 1x1 white fallback"), note)
        return row

    # -- fallbacks --

    def test_no_texture(self):
        obj_model(self.src, "plain", None)
        self.assert_fallback("plain.obj", "the model names no diffuse texture")

    def test_missing_texture(self):
        obj_model(self.src, "m", "textures/missing.png")
        row = self.assert_fallback("m.obj", "texture 'textures/missing.png' not found")
        self.assertEqual(row["deps"], ["m.obj", "m.mtl"])

    def test_undecodable_texture_is_a_dependency(self):
        obj_model(self.src, "m", "bad.png")
        write(os.path.join(self.src, "bad.png"), b"\x89PNG\r\n\x1a\nnot really")
        row = self.assert_fallback("m.obj", "texture 'bad.png' cannot be decoded")
        # its bytes decided the output: editing it must change the key
        self.assertEqual(row["deps"], ["m.obj", "m.mtl", "bad.png"])

    def test_too_large_is_refused(self):
        obj_model(self.src, "m", "huge.png")
        big = png(1, 1, [b"\0\0\0"], 3)
        # same PNG with an IHDR saying 20000 x 1: refused from the header alone
        ihdr = struct.pack(">IIBBBBB", 20000, 1, 8, 2, 0, 0, 0)
        chunk = struct.pack(">I", 13) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
        write(os.path.join(self.src, "huge.png"), big[:8] + chunk + big[8 + 25:])
        self.assert_fallback("m.obj", "texture 'huge.png' is 20000x1: larger than the importer decodes")

    def test_escaping_path_is_refused_unread(self):
        obj_model(self.src, "m", "../secret.png")
        # a FIFO: opening it for reading would block the worker until its
        # timeout, so a quick success proves it was never opened
        os.mkfifo(os.path.join(self.tmp, "secret.png"))
        t0 = time.time()
        row = self.assert_fallback("m.obj", "texture '../secret.png' refused: it leaves the source root")
        self.assertLess(time.time() - t0, 20)
        self.assertEqual(row["deps"], ["m.obj", "m.mtl"])

    def test_symlink_out_of_the_root_is_refused(self):
        write(os.path.join(self.tmp, "outside.png"), png(1, 1, [b"\1\2\3"], 3))
        os.symlink(os.path.join(self.tmp, "outside.png"), os.path.join(self.src, "link.png"))
        obj_model(self.src, "m", "link.png")
        row = self.assert_fallback("m.obj", "texture 'link.png' refused: it leaves the source root")
        self.assertEqual(row["deps"], ["m.obj", "m.mtl"])

    # -- found textures --

    def test_relative_png_rgb_odd_width(self):
        rows = pixels(3, 2, 3, 7)
        write(os.path.join(self.src, "textures", "wood.png"), png(3, 2, rows, 3))
        obj_model(self.src, "m", "textures/wood.png")
        data, row, note = self.tex("m.obj")
        self.assertEqual(data, expected_tex(3, 2, 3, rows))
        self.assertEqual(struct.unpack("<iiiHH", data[:16]), (3, 2, 4, 3, 3))
        self.assertEqual(row["deps"], ["m.obj", "m.mtl", "textures/wood.png"])
        self.assertEqual(note, "")

    def test_png_rgba(self):
        rows = pixels(3, 3, 4, 40)
        write(os.path.join(self.src, "skin.png"), png(3, 3, rows, 4))
        obj_model(self.src, "m", "skin.png")
        data, _, _ = self.tex("m.obj")
        self.assertEqual(struct.unpack("<iiiHH", data[:16]), (3, 3, 4, 3, 3))
        self.assertEqual(data, expected_tex(3, 3, 4, rows))

    def test_tga_rgb_aligned_rows_stay_rgb(self):
        rows = pixels(4, 3, 3, 90)
        write(os.path.join(self.src, "t.tga"), tga(4, 3, rows))
        obj_model(self.src, "m", "t.tga")
        data, _, _ = self.tex("m.obj")
        self.assertEqual(struct.unpack("<iiiHH", data[:16]), (4, 3, 3, 0, 0))
        self.assertEqual(data, expected_tex(4, 3, 3, rows))

    def test_bmp_odd_width(self):
        rows = pixels(5, 2, 3, 3)
        write(os.path.join(self.src, "b.bmp"), bmp(5, 2, rows))
        obj_model(self.src, "m", "b.bmp")
        data, _, _ = self.tex("m.obj")
        self.assertEqual(data, expected_tex(5, 2, 3, rows))

    def test_absolute_artist_path_found_by_base_name(self):
        rows = pixels(2, 2, 3, 11)
        write(os.path.join(self.src, "props", "wood.png"), png(2, 2, rows, 3))
        obj_model(os.path.join(self.src, "props"), "m", "C:\\Users\\artist\\tex\\wood.png")
        data, row, _ = self.tex("props/m.obj")
        self.assertEqual(data, expected_tex(2, 2, 3, rows))
        self.assertEqual(row["deps"], ["props/m.obj", "props/m.mtl", "props/wood.png"])

    def test_base_name_ignores_case(self):
        rows = pixels(2, 1, 4, 60)
        write(os.path.join(self.src, "wood.png"), png(2, 1, rows, 4))
        obj_model(self.src, "m", "C:\\tex\\Wood.PNG")
        data, row, _ = self.tex("m.obj")
        self.assertEqual(data, expected_tex(2, 1, 4, rows))
        self.assertEqual(row["deps"], ["m.obj", "m.mtl", "wood.png"])

    def test_path_as_written_wins_over_base_name(self):
        near = pixels(2, 2, 4, 1)
        far = pixels(2, 2, 4, 100)
        write(os.path.join(self.src, "textures", "wood.png"), png(2, 2, far, 4))
        write(os.path.join(self.src, "wood.png"), png(2, 2, near, 4))
        obj_model(self.src, "m", "textures/wood.png")
        data, row, _ = self.tex("m.obj")
        self.assertEqual(data, expected_tex(2, 2, 4, far))
        self.assertNotIn("wood.png", row["deps"])

    def test_embedded_png_in_glb(self):
        rows = pixels(3, 2, 4, 33)
        glb_model(os.path.join(self.src, "e.glb"), png(3, 2, rows, 4))
        data, row, note = self.tex("e.glb")
        self.assertEqual(data, expected_tex(3, 2, 4, rows))
        self.assertEqual(row["deps"], ["e.glb"])
        self.assertEqual(note, "")

    def test_other_formats_are_not_keyed_by_the_texture(self):
        """Every run searches for the texture, so its inputs are the same
        whatever the formats (docs/cache.md, "Keys"), but only .tex is
        keyed by it: an edit of the texture leaves .gmf up to date."""
        wood = os.path.join(self.src, "wood.png")
        write(wood, png(1, 1, [b"\1\2\3"], 3))
        obj_model(self.src, "m", "wood.png")
        cache = ("--cache-dir", os.path.join(self.tmp, "cache"))
        p, rows = convert([self.src], self.out, "-f", "gmf", *cache)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(rows[0]["deps"], ["m.obj", "m.mtl", "wood.png"])
        self.assertEqual(rows[0]["state"], "converted")
        write(wood, png(1, 1, [b"\x07\x08\x09"], 3))
        p, rows = convert([self.src], self.out, "-f", "gmf", *cache)
        self.assertEqual(rows[0]["state"], "up to date")
        p, rows = convert([self.src], self.out, "-f", "gmf:tex", *cache)
        self.assertEqual(rows[0]["state"], "converted")  # .tex: the texture is its input
        with open(os.path.join(self.out, "m.tex"), "rb") as f:
            self.assertEqual(f.read(), expected_tex(1, 1, 3, [b"\x07\x08\x09"]))


class MountTex(TreeCase):
    def setUp(self):
        super().setUp()
        self.rows = pixels(3, 2, 3, 5)
        write(os.path.join(self.src, "textures", "wood.png"), png(3, 2, self.rows, 3))
        obj_model(self.src, "m", "textures/wood.png")
        obj_model(self.src, "bare", "nothing/here.png")

    def edit_texture(self, rows, channels):
        path = os.path.join(self.src, "textures", "wood.png")
        mtime = os.stat(path).st_mtime_ns
        write(path, png(len(rows[0]) // channels, len(rows), rows, channels))
        os.utime(path, ns=(mtime + 3 * 10**9, mtime + 3 * 10**9))
        time.sleep(1.2)  # past the attribute cache

    def test_texture_edit_changes_the_view(self):
        view = os.path.join(self.mnt, "m.tex")
        with Mount(self.src, self.mnt, self.cache) as m:
            self.assertEqual(read(view), expected_tex(3, 2, 3, self.rows))
            self.assertEqual(m.stats()["conversions"], 1)
            # only the texture changes: the cache key includes it
            rows2 = pixels(4, 1, 4, 77)
            self.edit_texture(rows2, 4)
            self.assertEqual(read(view), expected_tex(4, 1, 4, rows2))
            self.assertEqual(m.stats()["conversions"], 2)
            self.assertEqual(os.stat(view).st_size, 16 + 16)
            # the fallback model still has its four LGE views, and the log says why
            self.assertEqual(read(os.path.join(self.mnt, "bare.tex")), FALLBACK)
            for ext in ("vrt", "tri", "sph"):
                self.assertGreater(len(read(os.path.join(self.mnt, "bare." + ext))), 0)
            self.assertTrue(m.alive())
        self.assertIn("meshfs: warning: bare.obj: tex: texture 'nothing/here.png' not found", m.output())

    def test_without_tex_the_texture_is_not_checked(self):
        with Mount(self.src, self.mnt, self.cache, "formats=gmf") as m:
            gmf = os.path.join(self.mnt, "m.gmf")
            before = read(gmf)
            self.assertEqual(m.stats()["conversions"], 1)
            self.edit_texture(pixels(2, 2, 3, 9), 3)
            self.assertEqual(read(gmf), before)
            self.assertEqual(m.stats()["conversions"], 1)  # not .gmf's input: nothing reconverted
        with Mount(self.src, self.mnt, self.cache) as m:
            # a mount with .tex finds the texture changed since and reads it
            self.assertEqual(read(os.path.join(self.mnt, "m.tex")), expected_tex(2, 2, 3, pixels(2, 2, 3, 9)))
            self.assertEqual(m.stats()["conversions"], 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
