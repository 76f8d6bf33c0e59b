#!/usr/bin/env python3
"""game_resources.lgepkg through a real mount and from meshfs-convert.

The package is parsed here from the layout in research/dem_vrt.md (Topic B),
not from meshfs's code:

  PackageHeader  char packageName[20], char versionString[20],
                 i32 numChunks, i32 totalSize (= sum of 44 + chunkSize)
  ChunkHeader    u32 type (0xA0000000 Vertices, ..1 Triangles, ..2 Texture,
                 ..3 BoundingSphere), char chunkName[32], i32 chunkSize,
                 u32 hashNum (XOR of the payload's MD5 as 4 big-endian words)
  then chunkSize payload bytes.

What meshfs promises on top (docs/formats/lgepkg.md): one package per folder
with models; per model, in byte order of the views' base names, the chunks
.vrt .tri .tex .sph, named after the base, each payload the view's exact bytes.
"""
import errno
import hashlib
import json
import os
import shutil
import struct
import subprocess
import time
import unittest

from common import SHARED, convert, run, run_tests, tempdir, tool
from mount import Mount

PKG = "game_resources.lgepkg"
TYPES = [0xA0000000, 0xA0000001, 0xA0000002, 0xA0000003]
EXTS = ["vrt", "tri", "tex", "sph"]

QUAD = b"""v -1 -1 0
v 1 -1 0
v 1 1 0
v -1 1 0
vt 0 0
vt 1 0
vt 1 1
vt 0 1
vn 0 0 1
f 1/1/1 2/2/1 3/3/1
f 1/1/1 3/3/1 4/4/1
"""
TRI = b"""v 0 0 0
v 2 0 0
v 0 3 0
f 1 2 3
"""
BOX = b"".join(b"v %d %d %d\n" % (x, y, z) for x in (0, 1) for y in (0, 1) for z in (0, 1)) + b"""f 1 3 4 2
f 5 6 8 7
f 1 2 6 5
f 3 7 8 4
f 1 5 7 3
f 2 4 8 6
"""
# names chosen so that file-system order, creation order and byte order differ
MODELS = {"b_tri.obj": TRI, "c_box.obj": BOX, "a_quad.obj": QUAD}
ORDER = ["a_quad", "b_tri", "c_box"]


def read(path):
    with open(path, "rb") as f:
        return f.read()


def hash_word(payload):
    w = struct.unpack(">4I", hashlib.md5(payload).digest())
    return w[0] ^ w[1] ^ w[2] ^ w[3]


def cstr(field):
    return field.split(b"\0", 1)[0].decode()


def parse(data):
    """(name, version, numChunks, totalSize, [(type, name, payload, hash, name_field)])"""
    name, version, num, total = struct.unpack_from("<20s20sii", data, 0)
    chunks, off = [], 48
    for _ in range(num):
        ctype, cname, size, h = struct.unpack_from("<I32siI", data, off)
        off += 44
        chunks.append((ctype, cname.split(b"\0", 1)[0].decode(), data[off:off + size], h, cname))
        off += size
    assert off == len(data), f"chunks end at {off}, file has {len(data)} bytes"
    return cstr(name), cstr(version), num, total, chunks, name, version


def write_models(folder, models):
    os.makedirs(folder, exist_ok=True)
    for n, text in models.items():
        with open(os.path.join(folder, n), "wb") as f:
            f.write(text)


class LgepkgTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempdir()
        self.tmp = self._tmp.name
        self.src = os.path.join(self.tmp, "src")
        write_models(os.path.join(self.src, "models"), MODELS)
        os.makedirs(os.path.join(self.src, "notes"))
        with open(os.path.join(self.src, "notes", "readme.txt"), "w") as f:
            f.write("no models here\n")
        self.mnt = os.path.join(self.tmp, "mnt")
        self.cache = os.path.join(self.tmp, "cache")

    def tearDown(self):
        self._tmp.cleanup()

    def mount(self, *opts, cache=None):
        return Mount(self.src, self.mnt, cache or self.cache, *opts)

    def check_package(self, data, folder, names, pkg_name="game_resources", version="1.0"):
        """Every rule of the layout, each payload against the view file in folder."""
        name, ver, num, total, chunks, name_field, ver_field = parse(data)
        self.assertEqual((name, ver), (pkg_name, version))
        self.assertEqual(name_field, pkg_name.encode().ljust(20, b"\0"))
        self.assertEqual(ver_field, version.encode().ljust(20, b"\0"))
        self.assertEqual(num, 4 * len(names))
        self.assertEqual(total, sum(44 + len(c[2]) for c in chunks))
        self.assertEqual(total, len(data) - 48)
        for i, (ctype, cname, payload, h, field) in enumerate(chunks):
            model, k = names[i // 4], i % 4
            self.assertEqual(ctype, TYPES[k], (i, hex(ctype)))
            self.assertEqual(cname, model)
            self.assertEqual(field, model.encode().ljust(32, b"\0"))  # zero-filled
            self.assertEqual(payload, read(os.path.join(folder, f"{model}.{EXTS[k]}")),
                             f"{model}.{EXTS[k]}")
            self.assertEqual(h, hash_word(payload), f"hash of {model}.{EXTS[k]}")
        return chunks

    def test_package_in_mount(self):
        time.sleep(2.1)  # past the stat index's racy window for fresh files (docs/cache.md)
        with self.mount() as m:
            folder = os.path.join(self.mnt, "models")
            # a listing names the package but converts nothing
            names = os.listdir(folder)
            self.assertIn(PKG, names)
            self.assertNotIn(PKG, os.listdir(os.path.join(self.mnt, "notes")))
            self.assertNotIn(PKG, os.listdir(self.mnt))  # the root holds no model
            with self.assertRaises(FileNotFoundError):
                os.stat(os.path.join(self.mnt, "notes", PKG))
            self.assertEqual(m.stats()["conversions"], 0)
            st = os.stat(os.path.join(folder, PKG))
            self.assertEqual(m.stats()["conversions"], 3)  # one per model
            self.assertEqual(st.st_mode & 0o777, 0o444)
            data = read(os.path.join(folder, PKG))
            self.assertEqual(st.st_size, len(data))  # exact at stat
            self.check_package(data, folder, ORDER)
            # the bytes are the same on a second read and after a remount
            self.assertEqual(read(os.path.join(folder, PKG)), data)
            inspect = run([tool("meshfs-inspect"), "--check", os.path.join(folder, PKG)])
            self.assertEqual(inspect.returncode, 0, inspect.stdout + inspect.stderr)
            self.assertIn("meshes 3", inspect.stdout)
        with self.mount() as m:
            # a fresh mount over the warm cache: the listing carries the
            # package's attributes (no LOOKUP for it), and nothing is redone
            before = m.stats()["attr_requests"]
            lines = run(["find", os.path.join(self.mnt, "models"), "-printf", "%P %s\\n"],
                        check=True).stdout.splitlines()
            listed = dict(l.rsplit(" ", 1) for l in lines if l)
            st = m.stats()
            self.assertEqual(int(listed[PKG]), len(data))
            self.assertEqual((st["conversions"], st["files_hashed"]), (0, 0))
            self.assertLessEqual(st["attr_requests"] - before, 1, st)  # the folder itself
            self.assertEqual(read(os.path.join(self.mnt, "models", PKG)), data)
            self.assertEqual(m.stats()["conversions"], 0)

    def test_convert_writes_the_same_bytes(self):
        with self.mount():
            data = read(os.path.join(self.mnt, "models", PKG))
        out = os.path.join(self.tmp, "out")
        p, _ = convert([self.src], out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(read(os.path.join(out, "models", PKG)), data)
        self.check_package(data, os.path.join(out, "models"), ORDER)
        self.assertFalse(os.path.exists(os.path.join(out, "notes")))
        self.assertFalse(os.path.exists(os.path.join(out, PKG)))
        # views the package needs but --formats leaves out are made, packed,
        # and not left behind
        out2 = os.path.join(self.tmp, "out2")
        p, _ = convert([self.src], out2, "--formats", "gmf,lgepkg", report=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(os.listdir(os.path.join(out2, "models"))),
                         sorted([PKG] + [n + ".gmf" for n in ORDER]))
        self.assertEqual(read(os.path.join(out2, "models", PKG)), data)
        # without lgepkg: no package
        out3 = os.path.join(self.tmp, "out3")
        p, _ = convert([self.src], out3, "--formats", "vrt,tri,tex,sph", report=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn(PKG, os.listdir(os.path.join(out3, "models")))

    def test_a_folder_of_more_models_than_descriptors(self):
        # 150 models: a package holding each view open while it was written
        # needed 600 descriptors, and failed past the limit ("Too many open
        # files"; a 20,000-model folder passes any usual limit).  Under a
        # limit of 128 the views are opened four at a time, in the mount
        # and in meshfs-convert alike.
        many = os.path.join(self.src, "many")
        write_models(many, {f"m{i:03d}.obj": b"v 0 0 0\nv %d 0 0\nv 0 1 0\nf 1 2 3\n" % (i + 1)
                            for i in range(150)})
        names = [f"m{i:03d}" for i in range(150)]
        out = os.path.join(self.tmp, "out")
        p = subprocess.run(["prlimit", "--nofile=128:128", tool("meshfs-convert"), "-q", "-j2",
                            "-f", "vrt,tri,tex,sph,lgepkg", "-o", out, many],
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        data = read(os.path.join(out, PKG))
        self.check_package(data, out, names)
        time.sleep(2.1)  # past the stat index's racy window (docs/cache.md)
        with self.mount() as m:
            subprocess.run(["prlimit", "--nofile=128:128", "--pid", str(m.proc.pid)], check=True)
            got = read(os.path.join(self.mnt, "many", PKG))
            self.assertEqual(m.stats()["conversions"], 150)
        self.assertEqual(got, data)

    def test_name_and_version_options(self):
        with self.mount():
            plain = read(os.path.join(self.mnt, "models", PKG))
        with self.mount("lgepkg_name=my_pack", "lgepkg_version=v9.9-beta") as m:
            named = read(os.path.join(self.mnt, "models", PKG))
            self.assertEqual(m.stats()["conversions"], 0)  # the views are the same
        self.assertEqual(named[:20], b"my_pack".ljust(20, b"\0"))
        self.assertEqual(named[20:40], b"v9.9-beta".ljust(20, b"\0"))
        self.assertEqual(named[40:], plain[40:])
        self.assertNotEqual(plain[:40], named[:40])
        out = os.path.join(self.tmp, "out")
        p, _ = convert([self.src], out, "--lgepkg-name", "my_pack", "--lgepkg-version", "v9.9-beta",
                       report=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(read(os.path.join(out, "models", PKG)), named)
        # 19 bytes is the most the 20-byte fields hold
        with self.mount("lgepkg_name=" + "n" * 19, "lgepkg_version=" + "v" * 19):
            data = read(os.path.join(self.mnt, "models", PKG))
        self.assertEqual(data[:40], b"n" * 19 + b"\0" + b"v" * 19 + b"\0")

    def test_broken_model_left_out(self):
        with open(os.path.join(self.src, "models", "broken.obj"), "wb") as f:
            f.write(b"")  # assimp refuses an empty .obj
        with self.mount():
            folder = os.path.join(self.mnt, "models")
            path = os.path.join(folder, PKG)
            data = read(path)
            self.assertEqual(os.stat(path).st_size, len(data))
            chunks = self.check_package(data, folder, ORDER)  # 12 chunks, broken not among them
            self.assertNotIn("broken", {c[1] for c in chunks})
            err = os.getxattr(path, "user.meshfs.error").decode()
            self.assertIn("broken.obj", err)
            self.assertIn("left out", err)
            self.assertNotIn("user.meshfs.error", os.listxattr(path))  # read by name only (cp -a)
            self.assertEqual(os.stat(os.path.join(folder, "broken.vrt")).st_size, 0)
        out = os.path.join(self.tmp, "out")
        p, _ = convert([self.src], out, report=False)
        self.assertEqual(p.returncode, 1)  # a model failed
        self.assertIn("left out models/broken.obj: import failed", p.stderr)
        self.assertEqual(read(os.path.join(out, "models", PKG)), data)

    def test_healthy_package_has_no_error(self):
        with self.mount():
            path = os.path.join(self.mnt, "models", PKG)
            with self.assertRaises(OSError) as cm:
                os.getxattr(path, "user.meshfs.error")
            self.assertEqual(cm.exception.errno, errno.ENODATA)

    def test_formats_option(self):
        with self.mount("formats=gmf"):
            folder = os.path.join(self.mnt, "models")
            self.assertNotIn(PKG, os.listdir(folder))
            with self.assertRaises(FileNotFoundError):
                os.stat(os.path.join(folder, PKG))
        with self.mount("formats=gmf:lgepkg", cache=os.path.join(self.tmp, "cache2")):
            folder = os.path.join(self.mnt, "models")
            names = sorted(os.listdir(folder))
            self.assertEqual(names, sorted([PKG] + list(MODELS) + [n + ".gmf" for n in ORDER]))
            with self.assertRaises(FileNotFoundError):
                os.stat(os.path.join(folder, "a_quad.vrt"))  # made for the package, not shown
            data = read(os.path.join(folder, PKG))
        with self.mount("formats=lgepkg", cache=os.path.join(self.tmp, "cache3")):
            folder = os.path.join(self.mnt, "models")
            self.assertEqual(sorted(os.listdir(folder)), sorted([PKG] + list(MODELS)))
            self.assertEqual(read(os.path.join(folder, PKG)), data)
        with self.mount():
            self.check_package(data, os.path.join(self.mnt, "models"), ORDER)

    def test_real_file_wins(self):
        real = b"a real package made elsewhere"
        with open(os.path.join(self.src, "models", PKG), "wb") as f:
            f.write(real)
        with self.mount():
            path = os.path.join(self.mnt, "models", PKG)
            self.assertEqual(read(path), real)
            self.assertEqual(os.listdir(os.path.join(self.mnt, "models")).count(PKG), 1)
            self.assertEqual(os.stat(path).st_size, len(real))

    def test_long_and_colliding_names(self):
        # two bases longer than 31 bytes sharing their first 22: the rule in
        # docs/formats/lgepkg.md gives "<first 22 bytes>~<hash word of the base>"
        long1 = "a_model_with_a_long_long_name_number_one"
        long2 = "a_model_with_a_long_long_name_number_two"
        folder_src = os.path.join(self.src, "long")
        write_models(folder_src, {long1 + ".obj": TRI, long2 + ".obj": QUAD})
        with self.mount():
            folder = os.path.join(self.mnt, "long")
            data = read(os.path.join(folder, PKG))
        _, _, num, _, chunks, _, _ = parse(data)
        self.assertEqual(num, 8)
        want = [b[:22] + "~%08x" % hash_word(b.encode()) for b in (long1, long2)]
        self.assertEqual([c[1] for c in chunks], [want[0]] * 4 + [want[1]] * 4)
        self.assertTrue(all(len(n) <= 31 for n in want))
        self.assertNotEqual(want[0], want[1])

    def test_lowercase_names(self):
        # chunk names are the view base names, lowercased like the views
        write_models(os.path.join(self.src, "mixed"), {"Upper_Case.OBJ": TRI, "b_Tri.obj": QUAD})
        with self.mount("lowercase_names"):
            folder = os.path.join(self.mnt, "mixed")
            data = read(os.path.join(folder, PKG))
            self.check_package(data, folder, ["b_tri", "upper_case"])
        out = os.path.join(self.tmp, "out")
        p, _ = convert([self.src], out, "--lowercase-names", report=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(read(os.path.join(out, "mixed", PKG)), data)

    def test_bad_values_exit_2(self):
        os.makedirs(self.mnt, exist_ok=True)
        for opt, said in (("lgepkg_name=" + "x" * 20, "lgepkg_name"), ("lgepkg_name=", "lgepkg_name"),
                          ("lgepkg_version=" + "y" * 20, "lgepkg_version"),
                          ("formats=gmf:bogus", "unknown format 'bogus'")):
            p = subprocess.run([tool("meshfs"), "-f", "-o", f"cache_dir={self.cache},{opt}", self.src,
                                self.mnt], capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 2, (opt, p.stderr))
            self.assertIn(said, p.stderr)
            self.assertFalse(os.path.ismount(self.mnt))
        out = os.path.join(self.tmp, "out")
        for args, said in ((["--lgepkg-name", "x" * 20], "--lgepkg-name"), (["--lgepkg-name", ""], "--lgepkg-name"),
                           (["--lgepkg-version", "y" * 20], "--lgepkg-version"),
                           (["--formats", "lgepkg,bogus"], "unknown format 'bogus'")):
            p, _ = convert([self.src], out, *args, report=False)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertIn(said, p.stderr)
            self.assertFalse(os.path.exists(os.path.join(out, "models", PKG)))

    @unittest.skipUnless(os.path.exists(os.path.join(SHARED, "testdata", "real", "lge", "aa.lge")),
                         "shared/testdata/real/lge not on this machine")
    def test_inspect_real_chunk(self):
        # MetaAppender's own output: old 20-byte names, hash 0xCB4B6A6A
        aa = os.path.join(SHARED, "testdata", "real", "lge", "aa.lge")
        data = read(aa)
        self.assertEqual(struct.unpack_from("<I", data, 28)[0], 0xCB4B6A6A)
        self.assertEqual(hash_word(data[32:]), 0xCB4B6A6A)
        p = run([tool("meshfs-inspect"), "--json", aa])
        self.assertEqual(p.returncode, 0, p.stderr)
        row = json.loads(p.stdout)
        self.assertEqual((row["format"], row["name"]), ("lge", "p1_verts"))
        self.assertTrue(any("old MetaAppender layout" in w for w in row["warnings"]), row)
        self.assertFalse(any("hashNum" in w for w in row["warnings"]), row)


if __name__ == "__main__":
    run_tests()
