"""Cloud identities a CI file names: the deploy roles an agent reading the file learns.

AWS roles (``role-to-assume``, any IAM role ARN), Azure federated identities
(``azure/login`` with ``client-id``), GCP workload identity providers and
service accounts. A ``${{ secrets.X }}`` or ``${{ vars.X }}`` reference is not
an identity (its value is not in the file) and is never reported. These are
identifiers, not secrets: they are shown.
"""

from __future__ import annotations

import re

from lsp_bridge.core.paths import read_regular
from lsp_bridge.inventory.model import CiIdentity

MAX_FILE = 1 << 20
MAX_IDENTITIES = 20

_VALUE = r"""\s*:\s*["']?([^\s"'#]+)"""
_AWS_KEY = re.compile(r"(?:role-to-assume|role_to_assume|role-arn|role_arn)" + _VALUE)
_AWS_ARN = re.compile(r"arn:aws[\w-]*:iam::\d{12}:role/[\w+=,.@/-]+")
_AZURE_LOGIN = re.compile(r"uses\s*:\s*[\"']?azure/login@")
_AZURE_CLIENT = re.compile(r"(?:client-id|client_id|clientId)" + _VALUE)
_GUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_GCP_PROVIDER_KEY = re.compile(r"workload[_-]identity[_-]provider" + _VALUE)
_GCP_PROVIDER = re.compile(r"projects/[\w.-]+/locations/[\w.-]+/workloadIdentityPools/[\w.-]+/providers/[\w.-]+")
_GCP_ACCOUNT = re.compile(r"[\w.+-]+@[\w.-]+\.iam\.gserviceaccount\.com")


def read_identities(path: str) -> tuple[tuple[CiIdentity, ...], bool]:
    """(identities, capped) named by the CI file at ``path``; ((), False) when unreadable or
    not a regular file (a link or a FIFO swapped in after the listing is not read)."""
    data = read_regular(path, MAX_FILE)
    if data is None:
        return (), False
    return identities_in(data.decode("utf-8", errors="replace"))


def identities_in(text: str) -> tuple[tuple[CiIdentity, ...], bool]:
    found: list[CiIdentity] = []
    for value in [m.group(1) for m in _AWS_KEY.finditer(text)] + _AWS_ARN.findall(text):
        if _AWS_ARN.fullmatch(value):
            found.append(CiIdentity("aws", "role", value))
    if _AZURE_LOGIN.search(text):
        for match in _AZURE_CLIENT.finditer(text):
            if _GUID.fullmatch(match.group(1)):
                found.append(CiIdentity("azure", "client-id", match.group(1)))
    for value in [m.group(1) for m in _GCP_PROVIDER_KEY.finditer(text)] + _GCP_PROVIDER.findall(text):
        if _GCP_PROVIDER.fullmatch(value):
            found.append(CiIdentity("gcp", "workload identity provider", value))
    for value in _GCP_ACCOUNT.findall(text):
        found.append(CiIdentity("gcp", "service account", value))
    unique = tuple(dict.fromkeys(found))
    return unique[:MAX_IDENTITIES], len(unique) > MAX_IDENTITIES
