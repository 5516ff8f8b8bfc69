"""FileApplicationLoggerInstaller: experiment.log, idempotent, removable."""

import logging
import sys

import pytest

from burnish.train.logger import FileApplicationLoggerInstaller


def test_install_writes_info_records_once_and_uninstall_restores(tmp_path):
    path = tmp_path / "artifacts" / "experiment.log"
    root = logging.getLogger()
    handlers_before = list(root.handlers)
    hook_before = sys.excepthook
    installer = FileApplicationLoggerInstaller(path)
    installer.install()
    installer.install()  # idempotent
    FileApplicationLoggerInstaller(path).install()  # same path, another installer
    try:
        assert installer.installed
        assert len(root.handlers) == len(handlers_before) + 1
        logging.getLogger("burnish.train.loop.learner").info("epoch %d done", 1)
        logging.getLogger("burnish.train").debug("not written")
    finally:
        installer.uninstall()
    logging.getLogger("burnish.train").warning("after uninstall")

    text = path.read_text()
    assert text.count("epoch 1 done") == 1
    assert "INFO burnish.train.loop.learner: epoch 1 done" in text
    assert "not written" not in text and "after uninstall" not in text
    assert root.handlers == handlers_before
    assert sys.excepthook is hook_before
    assert logging.getLogger("burnish").level == logging.NOTSET
    assert not installer.installed
    installer.uninstall()  # no-op


def test_uncaught_exception_is_logged_to_the_file(tmp_path, capsys):
    path = tmp_path / "experiment.log"
    with FileApplicationLoggerInstaller(path):
        try:
            raise RuntimeError("boom in epoch 3")
        except RuntimeError:
            sys.excepthook(*sys.exc_info())
    text = path.read_text()
    assert "ERROR burnish: Uncaught exception" in text
    assert "RuntimeError: boom in epoch 3" in text
    assert str(path) in capsys.readouterr().err


def test_a_directory_is_not_a_log_file(tmp_path):
    with pytest.raises(ValueError, match="`path` must be a file, not a directory"):
        FileApplicationLoggerInstaller(tmp_path).install()
