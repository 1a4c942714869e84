"""Licence detection (SPDX ids) from licence files, SPDX headers and packaging metadata.

Text signatures are distinctive phrases of each licence's text, checked most specific first
(e.g. LGPL before GPL, BSD-3 before BSD-2). Unknown text gives None: the allowlist filter then
rejects it, because a licence we cannot name is a licence we cannot honour.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

LICENCE_FILE_NAMES = ("LICENSE", "LICENCE", "COPYING", "LICENSE.txt", "LICENSE.md", "LICENCE.txt", "LICENCE.md",
                      "COPYING.txt", "LICENSE.rst", "License.txt", "license", "license.txt", "license.md")

# (spdx id, phrases that must all appear in the lower-cased, whitespace-collapsed text)
_SIGNATURES: list[tuple[str, tuple[str, ...]]] = [
    ("AGPL-3.0", ("gnu affero general public license",)),
    ("LGPL-3.0", ("gnu lesser general public license", "version 3")),
    ("LGPL-2.1", ("gnu lesser general public license", "version 2.1")),
    ("LGPL-2.1", ("gnu library general public license",)),
    ("GPL-3.0", ("gnu general public license", "version 3")),
    ("GPL-2.0", ("gnu general public license", "version 2")),
    ("MPL-2.0", ("mozilla public license", "2.0")),
    ("Apache-2.0", ("apache license", "version 2.0")),
    ("Apache-2.0", ("licensed under the apache license, version 2.0",)),
    ("BSL-1.0", ("boost software license",)),
    ("Unlicense", ("this is free and unencumbered software released into the public domain",)),
    ("CC0-1.0", ("cc0 1.0 universal",)),
    ("BSD-3-Clause", ("redistribution and use in source and binary forms", "neither the name")),
    ("BSD-3-Clause", ("redistribution and use in source and binary forms", "names of its contributors")),
    ("BSD-2-Clause", ("redistribution and use in source and binary forms",)),
    ("MIT", ("permission is hereby granted, free of charge", "the above copyright notice and this permission notice shall be included")),
    # MIT-0 is MIT without the notice condition: its phrases are all in MIT's text too, so it comes after
    ("MIT-0", ("permission is hereby granted, free of charge", "without restriction", "the software is provided \"as is\"")),
    ("ISC", ("permission to use, copy, modify, and/or distribute this software for any purpose with or without fee is hereby granted",)),
    ("ISC", ("permission to use, copy, modify, and distribute this software for any purpose with or without fee is hereby granted",)),
    ("Zlib", ("this software is provided 'as-is', without any express or implied warranty", "altered source versions must be plainly marked")),
    ("CC-BY-NC-4.0", ("attribution-noncommercial 4.0",)),
    ("CC-BY-4.0", ("attribution 4.0 international",)),
]

_SPDX_HEADER = re.compile(r"SPDX-License-Identifier:\s*([A-Za-z0-9.+\-]+(?:\s+(?:OR|AND|WITH)\s+[A-Za-z0-9.+\-]+)*)")

# Common non-SPDX spellings in packaging metadata and GitHub.
_ALIASES = {
    "mit": "MIT", "mit license": "MIT", "the mit license": "MIT", "apache": "Apache-2.0", "apache 2.0": "Apache-2.0",
    "apache-2.0": "Apache-2.0", "apache 2": "Apache-2.0", "apache license 2.0": "Apache-2.0",
    "apache software license": "Apache-2.0", "apache license, version 2.0": "Apache-2.0", "apache2": "Apache-2.0",
    "bsd": "BSD-3-Clause", "bsd license": "BSD-3-Clause", "bsd-3-clause": "BSD-3-Clause", "new bsd": "BSD-3-Clause",
    "3-clause bsd": "BSD-3-Clause", "bsd 3-clause": "BSD-3-Clause", "bsd-2-clause": "BSD-2-Clause", "2-clause bsd": "BSD-2-Clause",
    "simplified bsd": "BSD-2-Clause", "isc": "ISC", "isc license": "ISC", "unlicense": "Unlicense", "the unlicense": "Unlicense",
    "mpl-2.0": "MPL-2.0", "mpl 2.0": "MPL-2.0", "gpl-3.0": "GPL-3.0", "gplv3": "GPL-3.0", "gpl-2.0": "GPL-2.0", "gplv2": "GPL-2.0",
    "lgpl-3.0": "LGPL-3.0", "lgpl-2.1": "LGPL-2.1", "agpl-3.0": "AGPL-3.0", "cc0-1.0": "CC0-1.0", "zlib": "Zlib", "0bsd": "0BSD",
    "gpl-3.0-only": "GPL-3.0", "gpl-3.0-or-later": "GPL-3.0", "gpl-2.0-only": "GPL-2.0", "gpl-2.0-or-later": "GPL-2.0",
    "lgpl-3.0-only": "LGPL-3.0", "lgpl-2.1-only": "LGPL-2.1", "lgpl-2.1-or-later": "LGPL-2.1", "agpl-3.0-only": "AGPL-3.0",
    "mit-0": "MIT-0", "bsl-1.0": "BSL-1.0",
}

# Apache 2.0 however it is spelt: "Apache-2" (uni2ts' SPDX headers), "Apache License Version 2.0",
# "Apache Software License 2.0", "Apache v2", "ASL 2.0".
_APACHE_2 = re.compile(r"(?:the\s+)?(?:apache|asl)(?:[\s,_-]*(?:software|license|licence|version|v))*[\s,_-]*2(?:\.0)?", re.I)


def normalize_spdx(name: str | None) -> str | None:
    """A licence name as an SPDX id when we recognise it (GitHub's "NOASSERTION" is unknown)."""
    if not name:
        return None
    clean = name.strip()
    if clean.upper() in ("NOASSERTION", "OTHER", "UNKNOWN", "NONE", ""):
        return None
    if _APACHE_2.fullmatch(clean):
        return "Apache-2.0"
    # "BSD-3-Clause License", "MIT Licence": the id with the word "licence" after it
    bare = re.sub(r"\s+licen[cs]e$", "", clean, flags=re.I)
    return _ALIASES.get(clean.lower()) or _ALIASES.get(bare.lower(), bare if re.fullmatch(r"[A-Za-z0-9.+\-]+", bare) else None)


def detect_licence_text(text: str) -> str | None:
    """SPDX id of a licence file's text, or None."""
    flat = " ".join(text.lower().replace("\u201c", '"').replace("\u201d", '"').split())
    header = _SPDX_HEADER.search(text)
    if header and len(flat) < 400:
        return normalize_spdx(header.group(1).split()[0])
    # A file naming several licences (GFPGAN's: "licensed under the Apache License Version 2.0 except
    # for the third-party components listed below", then theirs, MPL among them) is under the one it
    # names first; of signatures found at the same place, the most specific (listed first).
    found = [(flat.find(phrases[0]), i, spdx) for i, (spdx, phrases) in enumerate(_SIGNATURES) if all(p in flat for p in phrases)]
    return min(found)[2] if found else None


def spdx_header(text: str) -> str | None:
    """The SPDX-License-Identifier in a source file's first lines (the first id of an expression)."""
    head = "\n".join(text.splitlines()[:30])
    m = _SPDX_HEADER.search(head)
    return normalize_spdx(m.group(1).split()[0]) if m else None


def metadata_licence(root: Path) -> str | None:
    """Licence named in pyproject.toml, setup.cfg, setup.py or PKG-INFO under root."""
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8", errors="replace"))
        except tomllib.TOMLDecodeError:
            data = {}
        lic = data.get("project", {}).get("license")
        if isinstance(lic, str):
            return normalize_spdx(lic)
        if isinstance(lic, dict) and isinstance(lic.get("text"), str):
            return normalize_spdx(lic["text"]) or detect_licence_text(lic["text"])
        poetry = data.get("tool", {}).get("poetry", {}).get("license")
        if isinstance(poetry, str):
            return normalize_spdx(poetry)
    for name in ("PKG-INFO", "setup.cfg"):
        path = root / name
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            m = re.search(r"^License-Expression:\s*(\S+)", text, re.M) or re.search(r"^[Ll]icen[sc]e\s*[:=]\s*(.+)$", text, re.M)
            if m and normalize_spdx(m.group(1)):
                return normalize_spdx(m.group(1))
            for cls in re.findall(r"License :: OSI Approved :: ([^\n]+)", text):
                found = normalize_spdx(cls.replace(" License", "").strip()) or normalize_spdx(cls.strip())
                if found:
                    return found
    setup = root / "setup.py"
    if setup.is_file():
        m = re.search(r"license\s*=\s*['\"]([^'\"]+)['\"]", setup.read_text(encoding="utf-8", errors="replace"))
        if m:
            return normalize_spdx(m.group(1))
    return None


def directory_licence(root: Path) -> str | None:
    """Licence of a directory: its licence file, else packaging metadata, searching up to 2 parents
    (a subfolder of a clone is covered by the clone's licence)."""
    for folder in [root, *list(root.parents)[:2]]:
        for name in LICENCE_FILE_NAMES:
            path = folder / name
            if path.is_file():
                found = detect_licence_text(path.read_text(encoding="utf-8", errors="replace"))
                if found:
                    return found
        found = metadata_licence(folder)
        if found:
            return found
    return None
