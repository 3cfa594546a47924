"""The watch plan stays within its budget whatever the tree, and the watcher reports changes."""

from __future__ import annotations

import time

from lsp_bridge.lsp.watch import WATCH_BUDGET, Watcher, plan_watches


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
        deadline = time.monotonic() + 5
        while not batches and time.monotonic() < deadline:
            time.sleep(0.02)
        assert any(str(tmp_path / "existing.txt") in b for b in batches)
        batches.clear()
        (tmp_path / "existing.txt").read_text()
        list(tmp_path.iterdir())
        time.sleep(0.3)
        assert batches == []  # reads never wake the watcher
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
    watcher = Watcher(batches.append, debounce=0.05, on_limit=lambda: limits.append(True), deep_budget=6)
    try:
        watcher.apply(plan_watches(config_files=[], folders=[], common_dirs=[], union=[str(tmp_path / "a")]))
        time.sleep(0.3)  # the first walk records the directories' times
        (deep / ".env").write_text("KEY=x\n")
        deadline = time.monotonic() + 5
        while not any(str(deep) in b for b in batches) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert any(str(deep) in b for b in batches)
        assert watcher.limit_note is None and limits == []
        watcher.apply(plan_watches(config_files=[], folders=[], common_dirs=[], union=[str(tmp_path)]))
        deadline = time.monotonic() + 5
        while not limits and time.monotonic() < deadline:
            time.sleep(0.02)
        assert limits == [True]
        assert watcher.limit_note and "6 directories" in watcher.limit_note
    finally:
        watcher.stop()
