"""The typed status contract: the committed schema is the generated one, real server
output validates against it, and so do the extension's recorded fixtures."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from lsp_bridge.core import status as contract
from tests.test_lsp import Session, as_data, client, monorepo, raw_client, wait_for  # noqa: F401 - fixtures

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_FILE = ROOT / contract.SCHEMA_PATH
FIXTURES = ROOT / "vscode-extension" / "test" / "fixtures"
SCHEMA = json.loads(SCHEMA_FILE.read_text())


def validate(instance, definition: str) -> None:
    """Validate against one definition of the committed schema (closed objects: no extra keys)."""
    schema = {**SCHEMA, "$ref": f"#/definitions/{definition}"}
    jsonschema.Draft7Validator(schema).validate(instance)


def test_the_committed_schema_is_the_generated_one():
    assert SCHEMA_FILE.read_text() == contract.schema_text(), (
        "docs/rootguard-lsp.schema.json is stale: run `python -m lsp_bridge.core.status --write`"
    )


def test_the_schema_keeps_the_fields_product_md_promises():
    status = SCHEMA["definitions"]["Status"]
    for name in ("roots", "union", "shadowed", "worktrees", "widened", "warnings"):
        assert name in status["required"], name
    assert status["additionalProperties"] is False


def test_a_payload_that_drifts_from_the_contract_fails_validation():
    good = json.loads((FIXTURES / "status-narrow.json").read_text())
    validate(good, "Status")
    for broken in ({**good, "extra": 1}, {k: v for k, v in good.items() if k != "summary"}, {**good, "widened": "yes"}):
        with pytest.raises(jsonschema.ValidationError):
            validate(broken, "Status")
    with pytest.raises(TypeError, match="unknown field"):
        contract.from_json(contract.Status, {**good, "extra": 1})


@pytest.mark.parametrize(
    "name, definition",
    [("status-narrow", "Status"), ("status-widened-pending", "Status"), ("status-widened", "Status"),
     ("status-no-folder", "Status"), ("explain", "ExplainResult"), ("inventory", "Inventory")],
)
def test_the_extension_fixtures_validate(name, definition):
    data = json.loads((FIXTURES / f"{name}.json").read_text())
    validate(data, definition)
    assert "/tmp" not in json.dumps(data)  # recorded with placeholders, not this machine's paths


async def test_real_server_output_validates(client, monorepo):  # noqa: F811 - pytest fixtures
    await client.start([monorepo.narrow])
    await client.next_status(0, lambda s: s["mounts"] is not None, "status with mounts")
    mark = client.change_folders(added=[monorepo.repo])
    await client.next_status(mark, lambda s: s["inventory"] and s["mounts"] is not None, "inventory and mounts")
    assert len(client.statuses) >= 4
    for status in client.statuses:
        validate(status, "Status")
    widened = client.statuses[-1]
    assert widened["summary"].startswith("⚠ union ×")
    line = next(w for w in client.warnings() if "widened the agent's boundary" in w)
    assert widened["summary"].removeprefix("⚠ union ") in line  # one summary text everywhere
    await wait_for(lambda: all(text in client.log_text() for text in widened["widening_lines"]), what="the report in the log")

    request = client.client.protocol.send_request_async
    validate(as_data(await request("rootguard/explain", {"path": str(Path(monorepo.repo) / ".env")})), "ExplainResult")
    validate(as_data(await request("rootguard/explain", {"path": ""})), "RequestError")
    validate(as_data(await request("rootguard/inventory", {})), "Inventory")
    answer = as_data(await request("rootguard/access", {"path": str(Path(monorepo.repo) / "README.md"), "op": "read"}))
    validate(answer, "AccessResult")
    validate(as_data(await request("rootguard/access", {"path": 7, "op": "read"})), "AccessResult")


def test_the_extension_types_are_generated_from_the_schema():
    """src/contract.ts is json-schema-to-typescript's output for the committed schema."""
    extension = ROOT / "vscode-extension"
    if shutil.which("node") is None or not (extension / "node_modules" / "json-schema-to-typescript").is_dir():
        pytest.skip("node or the extension's dev dependencies are missing (test_vscode_extension installs them)")
    done = subprocess.run(["node", "scripts/contract.mjs", "--check"], cwd=extension, capture_output=True, text=True,
                          timeout=120, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
