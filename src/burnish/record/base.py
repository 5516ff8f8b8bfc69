"""The recorder interface (Burn's `Recorder`/`FileRecorder`) and the metadata every file carries.

A recorder saves any record (see `burnish.record.tree`) to one file and loads it back:

    recorder.record(record, path) -> Path      # adds recorder.file_extension
    recorder.load(path, device=None) -> record

Every file is an envelope `{"metadata": RecordMetadata, "item": record}`; the bytes of the
envelope depend on the format (MessagePack, binary, JSON, safetensors), optionally gzipped.
Writes are atomic (`burnish.io`); loads never unpickle and validate every byte they read.
"""

from __future__ import annotations

import dataclasses
import os
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar, Literal

import torch

from burnish._version import __version__
from burnish.errors import RecordError
from burnish.io import atomic_open
from burnish.progress import Update
from burnish.record import sniff
from burnish.record.formats import gzip as gzip_format
from burnish.record.settings import PrecisionSettings, resolve_settings
from burnish.record.tree import check_tree, prepare, restore

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_BYTES",
    "FORMAT_VERSION",
    "FileRecorder",
    "ProgressCallback",
    "RecordMetadata",
]

#: Told the bytes just read or written, `progress(advance)`, and the total once known,
#: `progress(advance, total=n)`: a `burnish.progress.ByteProgress.task`, for instance.
ProgressCallback = Update

#: Version of the envelope layout; files with a higher one were written by a newer burnish.
FORMAT_VERSION = 1
#: Largest a gzip record may inflate to unless the recorder is told otherwise (4 GiB).
DEFAULT_MAX_DECOMPRESSED_BYTES = 4 << 30
_CHUNK = 1 << 20
_READ_CHUNK = 16 << 20


@dataclasses.dataclass(frozen=True)
class RecordMetadata:
    """What a record file says about itself (Burn's `BurnMetadata`, plus the record type).

    Attributes:
        format: the file format, e.g. `"burnish.mpk"`; `"foreign"` for files other tools wrote.
        format_version: version of the envelope layout.
        float: the stored float dtype (`"float16"`, ...).
        int: the widest stored int dtype.
        settings: the precision settings' name.
        version: the burnish version that wrote the file.
        record_type: what the record is, e.g. `"module:mypkg.Model"`, `"dict"`.
    """

    format: str
    format_version: int
    float: str
    int: str
    settings: str
    version: str
    record_type: str | None = None

    @classmethod
    def from_dict(cls, data: Any) -> RecordMetadata:
        """Validate decoded metadata.

        Raises:
            RecordError: if a field is missing or of the wrong type.
        """
        if not isinstance(data, dict):
            raise RecordError(f"Record metadata is a {type(data).__name__}; expected a map.")
        values: dict[str, Any] = {}
        for field in dataclasses.fields(cls):
            value = data.get(field.name)
            expected = int if field.name == "format_version" else str
            if value is None and field.name == "record_type":
                values[field.name] = None
                continue
            if not isinstance(value, expected) or isinstance(value, bool):
                raise RecordError(
                    f"Record metadata field `{field.name}` is {value!r}; expected a "
                    f"{expected.__name__}. The file is corrupt."
                )
            values[field.name] = value
        return cls(**values)


class FileRecorder(ABC):
    """Base of the file recorders: precision, file extension, atomic writes, safe loads.

    Args:
        settings: precision settings, as an instance or a class (default: full precision).
        max_decompressed_bytes: for gzip recorders, the size a file may inflate to.
        compresslevel: for gzip recorders, 0 (fast) to 9 (small); Burn uses 6.
    """

    #: Extension added to every path (Burn's `file_extension()`).
    file_extension: ClassVar[str]
    #: The `format` written into metadata.
    format: ClassVar[str]
    #: What `sniff.detect` calls this format's (uncompressed) bytes.
    kind: ClassVar[str]
    #: Whether the format's bytes are gzipped.
    compressed: ClassVar[bool] = False

    def __init__(
        self,
        settings: PrecisionSettings | type[PrecisionSettings] | None = None,
        *,
        max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
        compresslevel: int = 6,
    ) -> None:
        self.settings = resolve_settings(settings)
        self.max_decompressed_bytes = int(max_decompressed_bytes)
        self.compresslevel = int(compresslevel)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.settings.name}())"

    # -- public API ------------------------------------------------------------------------

    def record(
        self,
        record: Any,
        path: str | os.PathLike,
        *,
        record_type: str | None = None,
        progress: ProgressCallback | None = None,
    ) -> Path:
        """Save `record` to `path` + `file_extension` (unless `path` already ends with it).

        Args:
            record: nested dict/list/tensor/int/float/bool/str/None.
            path: target file; parent folders are created.
            record_type: what the record is, written into the metadata.
            progress: told the bytes written after each chunk (and the total, when the format
                knows it before compressing), e.g. for a progress bar.

        Returns:
            The path written.

        Raises:
            RecordError: if the record holds something a record cannot.
        """
        chunks = self._file_chunks(record, record_type)
        if progress is not None and isinstance(chunks, list):
            progress(0, total=sum(memoryview(chunk).nbytes for chunk in chunks))
        target = self.file_path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(target) as file:
            for chunk in chunks:
                file.write(chunk)
                if progress is not None:
                    progress(memoryview(chunk).nbytes)
        return target

    def load(
        self,
        path: str | os.PathLike,
        device: torch.device | str | None = None,
        *,
        progress: ProgressCallback | None = None,
    ) -> Any:
        """Load the record saved at `path` (extension optional); tensors go to `device`.

        Every tensor comes back in the dtype it had when recorded (values rounded through
        the stored precision). A file of another precision loads as in Burn: its values pass
        through this recorder's precision, as if this recorder had saved them (a full-precision
        file read by `CompactRecorder` is rounded to float16; a half-precision file read by
        `DefaultRecorder` gives its float16 values). A file of another format is an error.

        Args:
            path: the file, with or without the recorder's extension.
            device: where tensors go (default: CPU).
            progress: told the bytes of the file read so far (and its size), e.g. for a bar.

        Raises:
            RecordError: if the file is missing, of another format, corrupt or hostile.
        """
        metadata, stored = self.load_stored(path, progress=progress)
        record = self._in_own_precision(metadata, restore(stored, device), device)
        return self._loaded(metadata, record)

    def load_metadata(self, path: str | os.PathLike) -> RecordMetadata:
        """Read only what the file says about itself (it is still fully validated)."""
        return self.load_stored(path)[0]

    def load_stored(
        self, path: str | os.PathLike, *, progress: ProgressCallback | None = None
    ) -> tuple[RecordMetadata, Any]:
        """The file's metadata and its record as stored, for tools that look at a file.

        Tensors are `TensorLeaf(data, source_dtype)`: `data` in the stored dtype (e.g. float16
        for half precision), `source_dtype` the dtype `load` restores. `tree.restore` turns
        the record into what `load` returns.

        Raises:
            RecordError: as `load`.
        """
        source = self.existing_path(path)
        with self._errors_about(source):
            return self._load_envelope(self._read(source, progress))

    def to_bytes(self, record: Any, *, record_type: str | None = None) -> bytes:
        """The file content `record` would be saved as (Burn's bytes recorders)."""
        return b"".join(self._file_chunks(record, record_type))

    def _file_chunks(self, record: Any, record_type: str | None) -> Iterable[Any]:
        envelope = {
            "metadata": dataclasses.asdict(self.metadata(record, record_type)),
            "item": prepare(record, self.settings),
        }
        chunks = self._encode_chunks(envelope)
        if self.compressed:
            return gzip_format.compress_chunks(chunks, self.compresslevel)
        return chunks

    def from_bytes(self, data: bytes | bytearray, device: torch.device | str | None = None) -> Any:
        """Load a record from file content (the inverse of `to_bytes`)."""
        with self._errors_about(None):
            if self.compressed:
                self._expect(bytes(data[:16]), "gzip")
                data = gzip_format.decompress(
                    gzip_format.chunked(data), self.max_decompressed_bytes
                )
            metadata, stored = self._load_envelope(bytearray(data))
            record = self._in_own_precision(metadata, restore(stored, device), device)
            return self._loaded(metadata, record)

    def metadata(self, record: Any, record_type: str | None = None) -> RecordMetadata:
        """The metadata this recorder writes for `record`."""
        return RecordMetadata(
            format=self.format,
            format_version=FORMAT_VERSION,
            float=str(self.settings.float_dtype).removeprefix("torch."),
            int=str(self.settings.int_dtype).removeprefix("torch."),
            settings=self.settings.name,
            version=__version__,
            record_type=record_type or type(record).__name__,
        )

    def _in_own_precision(
        self, metadata: RecordMetadata, record: Any, device: torch.device | str | None
    ) -> Any:
        """`record` as this recorder would have stored it, if the file has another precision.

        Burn's recorders convert every tensor of a record to their settings' element type
        when loading (`TensorData::convert::<S::FloatElem>()`), whatever precision the file
        holds; with burnish's saving rules, a float that would overflow keeps its value.
        """
        if not metadata.settings or metadata.float == self.metadata(None).float:
            return record  # the recorder's own precision, or a file another tool wrote
        return restore(prepare(record, self.settings), device)

    def _loaded(self, metadata: RecordMetadata, record: Any) -> Any:
        """What `load` returns for the file's `record` (a format hook; default: the record)."""
        return record

    def file_path(self, path: str | os.PathLike) -> Path:
        """`path` with this recorder's extension appended unless it already ends with it."""
        path = Path(path)
        suffix = f".{self.file_extension}"
        return path if path.name.endswith(suffix) else path.with_name(path.name + suffix)

    def existing_path(self, path: str | os.PathLike) -> Path:
        """The file a load of `path` reads: `path` + extension, else `path` as given.

        Raises:
            RecordError: if neither exists.
        """
        candidate = self.file_path(path)
        if candidate.is_file():
            return candidate
        if Path(path).is_file():
            return Path(path)
        raise RecordError(
            f"No record file at {str(candidate)!r} (nor {str(path)!r}). Check the path; "
            f"{type(self).__name__} files end with .{self.file_extension}."
        )

    # -- format hooks ----------------------------------------------------------------------

    @abstractmethod
    def _encode(self, envelope: dict[str, Any]) -> bytes:
        """Serialize an envelope (metadata + prepared item)."""

    def _encode_chunks(self, envelope: dict[str, Any]) -> list[Any]:
        """Serialize as a list of bytes-like chunks (override to avoid joining copies)."""
        return [self._encode(envelope)]

    @abstractmethod
    def _decode(self, data: bytearray) -> Any:
        """Parse bytes into an envelope of `TensorLeaf`s."""

    def _check_envelope(self, envelope: Any) -> RecordMetadata:
        if not isinstance(envelope, dict) or not {"metadata", "item"} <= set(envelope):
            keys = sorted(map(str, envelope))[:8] if isinstance(envelope, dict) else None
            raise RecordError(
                f"The file is valid {self.kind} but not a burnish record: it has no metadata "
                f"and item{f' (top-level keys: {keys})' if keys is not None else ''}."
            )
        metadata = RecordMetadata.from_dict(envelope["metadata"])
        if metadata.format != self.format:
            raise RecordError(
                f"The file holds a {metadata.format!r} record; {type(self).__name__} reads "
                f"{self.format!r}. Load it with the recorder that wrote it."
            )
        if metadata.format_version > FORMAT_VERSION:
            raise RecordError(
                f"The file was written by burnish {metadata.version} with format version "
                f"{metadata.format_version}; this burnish ({__version__}) reads up to "
                f"{FORMAT_VERSION}. Upgrade burnish."
            )
        return metadata

    # -- internals -------------------------------------------------------------------------

    def _load_envelope(self, data: bytearray) -> tuple[RecordMetadata, Any]:
        self._expect(bytes(data[:16]), self.kind, data)
        envelope = self._decode(data)
        metadata = self._check_envelope(envelope)
        check_tree(envelope["item"])
        return metadata, envelope["item"]

    def _read(self, path: Path, progress: ProgressCallback | None = None) -> bytearray:
        if not self.compressed:
            return _read_all(path, progress)
        with open(path, "rb") as file:
            self._expect(file.read(16), "gzip")
            file.seek(0)
            if progress is not None:
                progress(0, total=os.fstat(file.fileno()).st_size)
            return gzip_format.decompress(_chunks(file, progress), self.max_decompressed_bytes)

    def _expect(self, head: bytes, kind: str, data: bytes | bytearray | None = None) -> None:
        found = sniff.detect(data if data is not None else head)
        if found == kind:
            return
        what = "an empty file" if found == "empty" else f"{found} data"
        hint = sniff.HINTS.get(found)
        inner = " inside the gzip stream" if self.compressed and kind != "gzip" else ""
        raise RecordError(
            f"Expected {kind} data{inner} ({type(self).__name__}, .{self.file_extension}), "
            f"found {what}." + (f" Load it with {hint}." if hint else " The file is corrupt.")
        )

    def _errors_about(self, path: Path | None) -> _Context:
        return _Context(type(self).__name__, path)


class _Context:
    """Prefix every `RecordError` (and stray OSError) with the file and the recorder."""

    def __init__(self, recorder: str, path: Path | None) -> None:
        self.prefix = (
            f"Cannot load {str(path)!r} with {recorder}"
            if path
            else (f"Cannot load bytes with {recorder}")
        )

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, error: BaseException | None, traceback: Any) -> Literal[False]:
        if isinstance(error, RecordError) and not str(error).startswith("Cannot load"):
            raise RecordError(f"{self.prefix}: {error}") from None
        if isinstance(error, (OSError, MemoryError)):
            raise RecordError(f"{self.prefix}: {error}") from error
        return False


def _read_all(path: Path, progress: ProgressCallback | None = None) -> bytearray:
    """The whole file in one buffer, read in `_READ_CHUNK` pieces (each one told to `progress`)."""
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        buffer = bytearray(size)
        view = memoryview(buffer)
        if progress is not None:
            progress(0, total=size)
        read = 0
        while read < size:
            count = file.readinto(view[read : read + _READ_CHUNK])
            if not count:
                break
            read += count
            if progress is not None:
                progress(count)
    if read != size:
        raise RecordError(f"File changed while being read ({read} of {size} bytes).")
    return buffer


def _chunks(file: Any, progress: ProgressCallback | None = None) -> Iterator[bytes]:
    while chunk := file.read(_CHUNK):
        if progress is not None:
            progress(len(chunk))
        yield chunk
