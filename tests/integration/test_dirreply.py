"""Replies built ahead (src/session/dirreply.c; docs/listing.md, "Replies built
ahead", issue 17's first listing): once a READDIRPLUS reply that filled the
kernel's buffer is sent, the daemon fills the next one while the kernel
takes in the first.  Counted from the stats xattr, never timed:

sent ahead    `ls -ln` of one folder of 400 models (3,601 names) shows every
              name and the sources' attributes (size, mtime, mode); a
              listing that stats nothing between its reads (os.listdir)
              sends every reply but the first and the empty last one from
              a reply built ahead (readdir_ahead_sent == readdir_requests - 2).
dropped       a listing stopped after its first reply leaves one reply
              built ahead that the kernel never gets: RELEASEDIR drops it
              (readdir_ahead_dropped == 1) and gives its entries' lookups
              back, so once the kernel drops its cached inodes
              (/proc/sys/vm/drop_caches) the daemon holds no file's node.
stale         a stat through the mount between two replies drops the reply
              built before it (it could carry attributes older than the
              stat's), and the listing is still whole.
seekdir       telldir/seekdir back within a listing reads the same names
              again, in the same order.
"""
import ctypes
import ctypes.util
import os
import stat
import subprocess
import time

from common import FORMATS, TreeCase, run_tests
from mount import Mount

MODELS = 400
PACKAGE = "game_resources.lgepkg"


def tetra(i):
    """A 4-triangle OBJ, its fourth vertex moved so every model is its own."""
    return (f"v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 {1 + i / 1000:.3f}\n"
            "f 1 3 2\nf 1 2 4\nf 2 3 4\nf 3 1 4\n")


class AheadTest(TreeCase):
    def setUp(self):
        super().setUp()
        self.flat = os.path.join(self.src, "flat")
        os.makedirs(self.flat)
        for i in range(MODELS):
            with open(os.path.join(self.flat, f"m{i:03d}.obj"), "w") as f:
                f.write(tetra(i))
        self.models = sorted(f"m{i:03d}" for i in range(MODELS))

    def expected_names(self):
        names = {PACKAGE}
        for m in self.models:
            names.add(m + ".obj")
            names.update(f"{m}.{fmt}" for fmt in FORMATS)
        return names

    def released(self, m):
        st = m.stats_released()
        self.assertEqual(st["listing_handles"], 0, "a listing handle was never released")
        return st

    def test_a_listing_is_sent_from_replies_built_ahead(self):
        with Mount(self.src, self.mnt, self.cache, "prefetch=0") as m:
            d = os.path.join(self.mnt, "flat")
            p = subprocess.run(["ls", "-ln", "--time-style=+%s", d], capture_output=True,
                               text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
            lines = p.stdout.splitlines()[1:]  # "total N" first
            listed = {}
            for line in lines:
                f = line.split(None, 6)
                listed[f[6]] = f
            self.assertEqual(set(listed), self.expected_names())
            for m_ in self.models:
                f = listed[m_ + ".obj"]
                st = os.stat(os.path.join(self.flat, m_ + ".obj"))
                self.assertEqual((f[0], int(f[4]), int(f[5])),
                                 (stat.filemode(st.st_mode), st.st_size, int(st.st_mtime)), m_)
        # a lister that stats nothing between its reads (os.listdir, `ls`,
        # find's fts, which reads a folder whole first) on a fresh mount
        with Mount(self.src, self.mnt, self.cache + "2", "prefetch=0") as m:
            names = os.listdir(os.path.join(self.mnt, "flat"))
            self.assertEqual(len(names), len(set(names)), "a name listed twice")
            self.assertEqual(set(names), self.expected_names())
            st = self.released(m)
            requests = st["readdir_requests"]
            self.assertGreaterEqual(requests, 10, st)  # 3,601 names: many replies
            # the first reply is built on request, and so is the empty last
            # one (a reply with no entries is never kept); each of the rest
            # was built ahead and sent, unless it waited past its 20 ms (a
            # lister descheduled on a loaded machine)
            ahead = st["readdir_ahead_sent"] + st["readdir_ahead_dropped"]
            self.assertEqual(ahead, requests - 2, st)
            self.assertGreaterEqual(st["readdir_ahead_sent"], 0.8 * ahead, st)
            self.assertEqual(st["readdir_ahead_waiting"], 0, st)

    def test_a_listing_stopped_early_gives_back_its_lookups(self):
        with Mount(self.src, self.mnt, self.cache, "prefetch=0") as m:
            it = os.scandir(os.path.join(self.mnt, "flat"))
            first = [next(it).name for _ in range(5)]
            it.close()
            self.assertEqual(len(set(first)), 5)
            st = self.released(m)
            self.assertEqual(st["readdir_requests"], 1, st)
            self.assertEqual(st["readdir_ahead_sent"], 0, st)
            self.assertEqual(st["readdir_ahead_dropped"], 1, st)
            self.assertEqual(st["readdir_ahead_waiting"], 0, st)
            # the first reply's sources and the dropped one's were given
            self.assertGreater(st["inode_files"], 0, st)
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("2\n")
            for _ in range(250):
                st = m.stats()
                if st["inode_files"] == 0:
                    break
                time.sleep(0.02)
            # a lookup never given back would keep its node for good
            self.assertEqual(st["inode_files"], 0, st)

    def test_a_stat_between_replies_drops_the_reply_built_ahead(self):
        # a reply built before a LOOKUP or GETATTR could carry attributes
        # older than what that request told the kernel: it is built again
        with Mount(self.src, self.mnt, self.cache, "prefetch=0") as m:
            d = os.path.join(self.mnt, "flat")
            it = os.scandir(d)
            names = [next(it).name for _ in range(5)]
            self.assertEqual(m.stats()["readdir_requests"], 1)
            # the reply after the first one is built ahead, waiting
            for _ in range(250):
                if m.stats()["readdir_ahead_waiting"] == 1:
                    break
                time.sleep(0.02)
            self.assertEqual(m.stats()["readdir_ahead_waiting"], 1)
            os.stat(os.path.join(d, "m399.obj"))
            names += [e.name for e in it]
            it.close()
            self.assertEqual(len(names), len(set(names)), "a name listed twice")
            self.assertEqual(set(names), self.expected_names())
            st = self.released(m)
            self.assertGreaterEqual(st["readdir_ahead_dropped"], 1, st)
            # after that one, the listing streams again from replies built ahead
            self.assertEqual(st["readdir_ahead_sent"],
                             st["readdir_requests"] - 2 - st["readdir_ahead_dropped"], st)

    def test_seekdir_back_reads_the_same_names(self):
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        libc.opendir.restype = ctypes.c_void_p
        libc.opendir.argtypes = [ctypes.c_char_p]
        libc.readdir.restype = ctypes.c_void_p
        libc.readdir.argtypes = [ctypes.c_void_p]
        libc.telldir.restype = ctypes.c_long
        libc.telldir.argtypes = [ctypes.c_void_p]
        libc.seekdir.argtypes = [ctypes.c_void_p, ctypes.c_long]
        libc.closedir.argtypes = [ctypes.c_void_p]
        name_at = 19  # struct dirent: d_ino, d_off, d_reclen, d_type, then d_name

        def read(dp, n):
            out = []
            for _ in range(n):
                e = libc.readdir(dp)
                if not e:
                    break
                out.append(ctypes.string_at(e + name_at).decode())
            return out

        with Mount(self.src, self.mnt, self.cache, "prefetch=0"):
            dp = libc.opendir(os.path.join(self.mnt, "flat").encode())
            self.assertTrue(dp)
            try:
                head = read(dp, 1000)
                pos = libc.telldir(dp)
                a = read(dp, 1000)
                libc.seekdir(dp, pos)
                b = read(dp, 1000)
                rest = read(dp, 10000)
            finally:
                libc.closedir(dp)
            self.assertEqual(len(a), 1000)
            self.assertEqual(a, b)
            names = [n for n in head + b + rest if n not in (".", "..")]
            self.assertEqual(len(names), len(set(names)), "a name listed twice")
            self.assertEqual(set(names), self.expected_names())


if __name__ == "__main__":
    run_tests()
