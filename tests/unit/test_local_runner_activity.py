"""A local erasure run is seen as active by every process sharing the store, and only while it runs."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from agentmem.deletion.runners import LocalRunner


def test_a_run_is_active_for_another_runner_until_it_ends(tmp_path: Path) -> None:
    # Given two runners (two worker processes of the local server) sharing the lock directory
    release = threading.Event()
    entered = threading.Event()

    def held_step(event: dict[str, Any]) -> Any:
        entered.set()
        assert release.wait(30)
        return {"drain_seconds": 0}

    worker_a = LocalRunner(held_step, lock_dir=tmp_path, sleep=lambda _: None)
    worker_b = LocalRunner(held_step, lock_dir=tmp_path, sleep=lambda _: None)
    # When worker A starts a run, and its first step is still going
    worker_a.start("01DELETION", "app")
    assert entered.wait(10)
    # Then worker B sees it running (it must answer a second DELETE with this run, not start another)
    assert worker_b.is_active("01DELETION")
    assert not worker_b.is_active("01OTHER")
    # And once the run has ended, nobody does
    release.set()
    assert worker_a.wait(30)
    assert not worker_a.is_active("01DELETION")
    assert not worker_b.is_active("01DELETION")


def test_a_run_whose_process_died_is_not_active(tmp_path: Path) -> None:
    # Given a process that took a run's lock and was then killed (a local server stopped mid-erasure)
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from agentmem.deletion.runners import _RunLock\n"
        "handle = _RunLock(Path(sys.argv[1]), '01DEAD').acquire()\n"
        "print('held', flush=True)\n"
        "time.sleep(60)\n"
    )
    process = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "held"
    runner = LocalRunner(lambda event: None, lock_dir=tmp_path)
    assert runner.is_active("01DEAD")
    process.kill()
    process.wait(10)
    # Then its lock file is left, but the run is not active: a new request may supersede it
    assert (tmp_path / "01DEAD.lock").exists()
    assert not runner.is_active("01DEAD")
