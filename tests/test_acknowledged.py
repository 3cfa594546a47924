"""What the person accepted (lsp_bridge/core/acknowledged.py) and its file (lsp/acknowledgements.py)."""

from __future__ import annotations

import json
import os

from lsp_bridge.core import acknowledged
from lsp_bridge.lsp.acknowledgements import AcknowledgementStore


def test_a_single_new_folder_is_its_own_reference_and_several_new_folders_accept_nothing():
    own = {"/src/shop/packages/checkout": ("/src/shop/packages/checkout", "/src/shop-wt/checkout")}
    assert acknowledged.reference({}, ["/src/shop/packages/checkout"], own) == own["/src/shop/packages/checkout"]
    assert acknowledged.reference({}, ["/src/shop/packages/checkout", "/src/shop"], own) == ()
    assert acknowledged.implicit({}, ["/a"]) == "/a" and acknowledged.implicit({}, ["/a", "/b"]) is None


def test_acknowledging_records_the_union_for_every_folder_of_the_window():
    records = acknowledged.acknowledge({}, ["/src/shop/packages/checkout", "/src/shop"], ["/src/shop"], 10.0)
    assert acknowledged.reference(records, ["/src/shop/packages/checkout"], {}) == ("/src/shop",)
    text = acknowledged.render(records)
    assert acknowledged.parse(text) == records


def test_bad_records_are_dropped_and_a_bad_file_is_an_error(tmp_path):
    text = json.dumps({"version": 1, "folders": {
        "relative/folder": {"union": ["/x"]}, "/ok": {"union": ["/ok"]}, "/bad": {"union": ["not-absolute"]}}})
    assert list(acknowledged.parse(text)) == ["/ok"]
    store = AcknowledgementStore(str(tmp_path / "state" / "acknowledged.json"))
    os.makedirs(tmp_path / "state")
    (tmp_path / "state" / "acknowledged.json").write_text("[" * 100_000)  # nested past the parser's depth
    assert store.load() == {} and "nested too deep" in store.error
    (tmp_path / "state" / "acknowledged.json").write_text("{ not json")
    assert store.load() == {} and "invalid JSON" in store.error  # nothing acknowledged: every wide window warns
    store.acknowledge(["/src/shop"], ["/src/shop"], 1.0)  # the next acknowledgement replaces it
    assert store.load()["/src/shop"].union == ("/src/shop",)
    assert oct(os.stat(store.path).st_mode & 0o777) == "0o600"


def test_a_configuration_change_is_described_in_words():
    from lsp_bridge.approvals.preview import config_changes

    before = 'version = 2\n[[paths]]\nid = "docs"\npath = "docs"\npolicies = { write = "deny" }\n'
    after = ('version = 2\n[approvals]\ntimeout_seconds = 1\n[[paths]]\nid = "docs"\npath = "docs"\n'
             'policies = { write = "allow" }\n[[paths]]\nid = "all"\npath = "/"\npolicies = { read = "allow" }\n')
    words = config_changes(before, after)
    assert 'adds rule all — path "/": read allow (the whole disk or home directory)' in words
    assert any(w.startswith("changes rule docs — was path \"docs\": write deny; now path \"docs\": write allow") for w in words)
    assert "changes approvals.timeout_seconds: (unset) → 1" in words
    assert config_changes(before, before + "# a comment\n") == [
        "no rule, root, mount or setting changes (comments or formatting only)"]


def test_the_store_is_where_platformdirs_puts_user_state(monkeypatch, tmp_path):
    """The store path is computed without importing platformdirs (start-up), to the same answer."""
    import platformdirs

    from lsp_bridge.lsp.acknowledgements import store_path

    for state in (str(tmp_path / "state"), "relative/state", None):
        if state is None:
            monkeypatch.delenv("XDG_STATE_HOME", raising=False)
        else:
            monkeypatch.setenv("XDG_STATE_HOME", state)
        assert store_path() == os.path.join(platformdirs.user_state_dir("rootguard"), "acknowledged.json")
