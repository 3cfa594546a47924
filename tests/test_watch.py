"""The watch plan stays within its budget whatever the tree, and the watcher reports changes."""

from __future__ import annotations

import threading
import time

from lsp_bridge.lsp.watch import WATCH_BUDGET, Watcher, plan_watches


def wait_for(condition, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    return condition()


def test_the_plan_is_bounded_on_a_wide_tree(tmp_path):
    repo = tmp_path / "repo"
    for i in range(200):
        (repo / "packages" / f"p{i}").mkdir(parents=True)
    for name in ("node_modules", ".git", ".cache"):
        (repo / name).mkdir()
    (repo / ".github").mkdir()
    plan = plan_watches(config_files=[str(tmp_path / "cfg" / "config.toml")], folders=[str(repo)],
                        common_dirs=[str(repo / ".git")], union=[str(repo)])
    watched = plan.all()
    assert len(watched) <= WATCH_BUDGET
    assert str(repo) in watched and str(repo / "packages") in watched and str(repo / ".github") in watched
    assert not any(p.endswith(("node_modules", ".cache")) for p in watched)
    assert str(repo / ".git") in plan.worktree_dirs


def test_the_watcher_reports_a_debounced_batch_of_changes_but_not_reads(tmp_path):
    batches: list[set[str]] = []
    watcher = Watcher(batches.append, debounce=0.05)
    try:
        watcher.apply(plan_watches(config_files=[], folders=[], common_dirs=[], union=[str(tmp_path)]))
        (tmp_path / "existing.txt").write_text("x")
        assert wait_for(lambda: any(str(tmp_path / "existing.txt") in b for b in batches))
        batches.clear()
        (tmp_path / "existing.txt").read_text()
        list(tmp_path.iterdir())
        # A change after the reads is the event that ends the wait (the kernel reports in order):
        # whatever the reads woke would be reported with it or before it, never after.
        (tmp_path / "marker.txt").write_text("m")
        assert wait_for(lambda: any(str(tmp_path / "marker.txt") in b for b in batches))
        assert not any(str(tmp_path / "existing.txt") in b for b in batches)  # reads never wake the watcher
    finally:
        watcher.stop()


def test_the_deep_rescan_sees_deep_files_and_says_when_its_budget_is_exhausted(tmp_path):
    """Below the watched levels a new file is reported by its directory; over budget, a status sentence."""
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    for i in range(5):
        (tmp_path / "wide" / f"d{i}").mkdir(parents=True)
    batches: list[set[str]] = []
    limits: list[bool] = []
    walks: list[float] = []
    walked = threading.Event()

    def idle(timeout: float) -> bool:
        """Asked before each walk or poll: the second time, the first walk is done (an event, not a sleep)."""
        walks.append(timeout)
        if len(walks) >= 2:
            walked.set()
        return True

    watcher = Watcher(batches.append, debounce=0.05, on_limit=lambda: limits.append(True), deep_budget=6, idle=idle)
    try:
        watcher.apply(plan_watches(config_files=[], folders=[], common_dirs=[], union=[str(tmp_path / "a")]))
        assert walked.wait(30)  # the first walk recorded the directories' times
        (deep / ".env").write_text("KEY=x\n")  # found by a later poll, below the watched levels
        assert wait_for(lambda: any(str(deep) in b for b in batches))
        assert watcher.limit_note is None and limits == []
        watcher.apply(plan_watches(config_files=[], folders=[], common_dirs=[], union=[str(tmp_path)]))
        assert wait_for(lambda: bool(limits))
        assert limits == [True]
        assert watcher.limit_note and "6 directories" in watcher.limit_note
    finally:
        watcher.stop()
