"""Downloads from mirrors served by an `http.server` on 127.0.0.1 (no network)."""

import functools
import gzip
import http.server
import io
import shutil
import sys
import threading
from pathlib import Path

import pytest

from burnish.data.dataset.download import RemoteFile, fetch_file
from burnish.data.dataset.vision import MnistDataset
from burnish.errors import DatasetError

MNIST = Path(__file__).resolve().parents[3] / "data" / "mnist"
IMAGES, LABELS = "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"


class _Handler(http.server.SimpleHTTPRequestHandler):
    requests: list[str]

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.requests.append(self.path)
        super().do_GET()


@pytest.fixture
def server(tmp_path):
    """Serves `tmp_path/www`: `good/` (real files), `corrupt/` (bad bytes), `missing/` (404)."""
    www = tmp_path / "www"
    for name in ("good", "corrupt", "missing"):
        (www / name).mkdir(parents=True)
    shutil.copy(MNIST / IMAGES, www / "good")
    shutil.copy(MNIST / LABELS, www / "good")
    labels = bytearray(gzip.decompress((MNIST / LABELS).read_bytes()))
    labels[-1] ^= 1  # one wrong label: a valid gzip with the wrong content
    (www / "corrupt" / LABELS).write_bytes(gzip.compress(bytes(labels)))
    (www / "corrupt" / IMAGES).write_bytes((MNIST / IMAGES).read_bytes()[:100_000])  # truncated
    requests: list[str] = []
    handler = type("Handler", (_Handler,), {"requests": requests})
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(www))
    )
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", requests
    httpd.shutdown()
    httpd.server_close()
    thread.join()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BURNISH_DATASETS", str(tmp_path / "no-datasets"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("BURNISH_MNIST_MIRRORS", raising=False)
    return tmp_path / "cache" / "burnish" / "datasets" / "mnist"


def test_download_falls_through_a_404_then_caches(server, cache):
    base, requests = server
    test = MnistDataset.test(mirrors=[f"{base}/missing/", f"{base}/good"])
    assert len(test) == 10000 and test.get(0).label == 7
    assert sorted(path.name for path in cache.iterdir()) == [IMAGES, LABELS]  # no temp files
    assert (cache / LABELS).read_bytes() == (MNIST / LABELS).read_bytes()
    assert requests == [f"/missing/{IMAGES}", f"/good/{IMAGES}", f"/missing/{LABELS}",
                        f"/good/{LABELS}"]  # fmt: skip
    assert len(MnistDataset.test(mirrors=[f"{base}/missing/"])) == 10000  # from the cache
    assert len(requests) == 4


def test_corrupt_and_truncated_downloads_are_rejected_and_not_cached(server, cache):
    base, _ = server
    with pytest.raises(DatasetError, match=r"(?s)every mirror failed.*download is truncated"):
        MnistDataset.test(mirrors=[f"{base}/corrupt/"])
    assert not cache.exists() or list(cache.iterdir()) == []
    labels = RemoteFile("t10k-labels-idx1-ubyte", MnistDataset.FILES["test"][1].sha256)
    with pytest.raises(DatasetError, match=r"corrupt download, sha256 of the decompressed bytes"):
        fetch_file(labels, [cache], cache, [f"{base}/corrupt/"])
    assert list(cache.iterdir()) == []


def test_a_corrupt_mirror_falls_through_to_a_good_one(server, cache):
    base, _ = server
    test = MnistDataset.test(mirrors=[f"{base}/corrupt/", f"{base}/good/"])
    assert len(test) == 10000
    assert sorted(path.name for path in cache.iterdir()) == [IMAGES, LABELS]


def test_mirrors_from_the_environment(server, cache, monkeypatch):
    base, requests = server
    monkeypatch.setenv("BURNISH_MNIST_MIRRORS", f"{base}/missing/,{base}/good/")
    assert len(MnistDataset.test()) == 10000
    assert requests[0] == f"/missing/{IMAGES}"


def test_every_mirror_failing_lists_each_failure(server, cache):
    base, _ = server
    with pytest.raises(DatasetError, match=r"(?s)missing/t10k-images.*404.*Place the file in"):
        MnistDataset.test(mirrors=[f"{base}/missing/", "http://127.0.0.1:9/"])
    with pytest.raises(DatasetError, match=r"no download mirror is set"):
        MnistDataset.test(mirrors=[])


def test_a_corrupt_cache_entry_is_downloaded_again(server, cache):
    base, requests = server
    cache.mkdir(parents=True)
    shutil.copy(MNIST / IMAGES, cache)
    (cache / LABELS).write_bytes(b"garbage")
    assert len(MnistDataset.test(mirrors=[f"{base}/good/"])) == 10000
    assert requests == [f"/good/{LABELS}"]
    assert (cache / LABELS).read_bytes() == (MNIST / LABELS).read_bytes()


class _Terminal(io.StringIO):
    """What rich sees as an interactive terminal."""

    def isatty(self):
        return True


def test_a_download_shows_a_progress_bar_when_stderr_is_a_terminal(server, cache, monkeypatch):
    base, _ = server
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setenv("COLUMNS", "120")
    images = MnistDataset.FILES["test"][0]
    fetch_file(images, [cache], cache, [f"{base}/good/"])
    screen = terminal.getvalue()
    size = (MNIST / IMAGES).stat().st_size
    assert "Downloading t10k-images-idx3-ubyte" in screen
    assert f"{size / 2**20:.1f}/{size / 2**20:.1f} MiB" in screen  # the total, from Content-Length
    assert (cache / IMAGES).read_bytes() == (MNIST / IMAGES).read_bytes()


def test_a_download_prints_nothing_when_stderr_is_not_a_terminal(server, cache, capfd):
    base, _ = server
    fetch_file(MnistDataset.FILES["test"][1], [cache], cache, [f"{base}/good/"])
    assert capfd.readouterr() == ("", "")
    assert (cache / LABELS).is_file()
