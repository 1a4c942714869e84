"""GitHub source through PyGithub: repository search, tree walk at the default branch's head,
blob download; incremental and polite.

- Incremental: per repository the state keeps the branch ETag, the last seen commit and the blob
  sha of every .py path. A refresh asks for the branch with `If-None-Match`; a 304 (or the same
  commit) skips the repository without a tree or blob request, and within a changed repository
  only blobs whose sha changed are downloaded (plus siblings needed to inline imports).
- Rate limits: a 403/429 carrying `retry-after` or `x-ratelimit-reset` is waited out with a
  countdown (capped by harvest.rate_limit_max_wait_s), then the request is repeated. Transient
  5xx errors are retried by urllib3 (harvest.github_retries).
- The token comes from the argument or GITHUB_TOKEN; it is never stored or logged.
"""

from __future__ import annotations

import base64
import json
import os
import time
from datetime import datetime, timezone
from typing import Any, Callable, TypeVar

import requests
from github import Auth, Github, GithubException, RateLimitExceededException, UnknownObjectException
from github.Requester import Requester
from rich.progress import BarColumn, Progress, TextColumn
from urllib3.util.retry import Retry

from autotriton.harvesting.config import HarvestConfig
from autotriton.harvesting.core import Harvester, HarvestResult, ProbeFn
from autotriton.harvesting.extract import Repository
from autotriton.harvesting.licences import detect_licence_text, normalize_spdx, spdx_header
from autotriton.harvesting.state import HarvestState
from autotriton.records import SourceRef

T = TypeVar("T")


class GitHubHarvestError(RuntimeError):
    """The GitHub harvest cannot go on (rate limit longer than allowed, bad credentials, ...)."""


def _header(headers: Any, name: str) -> str | None:
    for k, v in (headers or {}).items():
        if k.lower() == name:
            return str(v)
    return None


def rate_limit_wait(status: int, headers: Any, message: str = "", now: float | None = None) -> float | None:
    """Seconds to wait before retrying a rate-limited response; None when it is not one."""
    if status not in (403, 429):
        return None
    now = time.time() if now is None else now
    retry_after = _header(headers, "retry-after")
    if retry_after is not None:
        try:
            return max(0.0, float(retry_after))
        except ValueError:
            pass
    reset = _header(headers, "x-ratelimit-reset")
    remaining = _header(headers, "x-ratelimit-remaining")
    if reset is not None and (remaining == "0" or Requester.isRateLimitError(message) or status == 429):
        try:
            return max(0.0, float(reset) - now) + 0.5
        except ValueError:
            pass
    if status == 429 or Requester.isRateLimitError(message):
        return 60.0  # secondary limit without a hint: GitHub asks for at least a minute
    return None


class GitHubClient:
    """PyGithub with rate-limit waits (visible), transient-error retries and conditional GETs."""

    def __init__(self, config: HarvestConfig, token: str | None = None, base_url: str | None = None, *,
                 progress: bool = False, console: Any = None, sleep: Callable[[float], None] = time.sleep):
        token = token if token is not None else os.environ.get("GITHUB_TOKEN")
        retry = Retry(total=config.github_retries, status_forcelist=[500, 502, 503, 504], backoff_factor=0.2,
                      allowed_methods=["GET"], raise_on_status=False, respect_retry_after_header=False)
        self.gh = Github(base_url=(base_url or config.github_base_url).rstrip("/"), auth=Auth.Token(token) if token else None,
                         retry=retry, per_page=100, seconds_between_requests=None, timeout=30)
        self.config = config
        self.base_url = (base_url or config.github_base_url).rstrip("/")
        self.progress = progress
        self.console = console
        self.sleep = sleep
        self.waits: list[float] = []  # rate-limit waits taken (seconds), for the summary and tests
        self.requests = {"blobs": 0, "trees": 0, "branches": 0, "search_pages": 0}

    def call(self, fn: Callable[[], T], what: str) -> T:
        """Run one PyGithub call, waiting out rate limits (at most 5 times)."""
        for _ in range(6):
            try:
                return fn()
            except requests.exceptions.RequestException as exc:  # retried by urllib3 already
                raise GitHubHarvestError(
                    f"{what}: cannot reach {self.base_url} ({type(exc).__name__}); check the network, "
                    "harvest.github_base_url / --base-url, and a proxy if you use one") from exc
            except (RateLimitExceededException, GithubException) as exc:
                message = exc.data.get("message", "") if isinstance(exc.data, dict) else str(exc.data or "")
                wait = rate_limit_wait(exc.status, exc.headers, message)
                if wait is None:
                    raise
                self._wait(wait, what)
        raise GitHubHarvestError(f"{what}: still rate limited after 5 waits; try again later")

    def _wait(self, seconds: float, what: str) -> None:
        if seconds > self.config.rate_limit_max_wait_s:
            raise GitHubHarvestError(
                f"{what}: GitHub rate limit resets in {seconds:.0f} s, more than harvest.rate_limit_max_wait_s="
                f"{self.config.rate_limit_max_wait_s:.0f}; set GITHUB_TOKEN for a higher limit, or raise the cap")
        self.waits.append(seconds)
        with Progress(TextColumn("[yellow]rate limited[/] {task.description}"), BarColumn(), TextColumn("{task.fields[left]}"),
                      console=self.console, disable=not self.progress, transient=True) as bar:
            task = bar.add_task(what, total=seconds, left=f"{seconds:.0f}s")
            deadline = time.monotonic() + seconds
            while (left := deadline - time.monotonic()) > 0:
                self.sleep(min(0.25, left))
                bar.update(task, completed=seconds - max(0.0, deadline - time.monotonic()), left=f"{max(0.0, left):.0f}s")

    def conditional_get(self, url: str, etag: str | None, what: str) -> tuple[int, dict[str, Any], Any]:
        """GET with If-None-Match: (304, headers, None) when unchanged, else (200, headers, json)."""
        def once() -> tuple[int, dict[str, Any], Any]:
            headers = {"If-None-Match": etag} if etag else {}
            status, resp_headers, body = self.gh.requester.requestJson("GET", url, headers=headers)
            if status == 304:
                return status, resp_headers, None
            data = json.loads(body) if body else None
            if status >= 400:
                raise Requester.createException(status, resp_headers, data)
            return status, resp_headers, data

        return self.call(once, what)


def _repo_licence(client: GitHubClient, repo: Any) -> str | None:
    lic = getattr(repo, "license", None)
    spdx = normalize_spdx(getattr(lic, "spdx_id", None)) if lic is not None else None
    if spdx:
        return spdx
    try:
        content = client.call(repo.get_license, f"{repo.full_name} licence")
    except UnknownObjectException:
        return None
    spdx = normalize_spdx(getattr(getattr(content, "license", None), "spdx_id", None))
    if spdx:
        return spdx
    # GitHub could not name it (NOASSERTION): read the licence file's text ourselves
    try:
        text = base64.b64decode(content.content or "").decode("utf-8", errors="replace")
    except (ValueError, TypeError):
        return None
    return detect_licence_text(text)


def search_query(config: HarvestConfig) -> str:
    parts = [config.github_query]
    if config.min_stars:
        parts.append(f"stars:>={config.min_stars}")
    if config.pushed_after:
        parts.append(f"pushed:>{config.pushed_after}")
    return " ".join(p for p in parts if p)


def harvest_github(config: HarvestConfig | None = None, token: str | None = None, base_url: str | None = None, *,
                   probe: ProbeFn | None = None, progress: bool = False, commit_state: bool = True,
                   state: HarvestState | None = None, console: Any = None, validation_config: Any = None,
                   environments: Any = None, sleep: Callable[[float], None] = time.sleep) -> HarvestResult:
    """Search GitHub (config.github_query, min_stars, pushed_after, licence allowlist), walk each
    repository's tree at its default branch's head and harvest its .py files."""
    config = config or HarvestConfig()
    if state is None:
        state = HarvestState.for_config(config)
    client = GitHubClient(config, token, base_url, progress=progress, console=console, sleep=sleep)
    harvester = Harvester(config, probe=probe, state=state, progress=progress, console=console, validation_config=validation_config,
                          environments=environments)
    query = search_query(config)
    results = client.gh.search_repositories(query, sort="stars", order="desc")
    repos: list[Any] = []
    page = 0
    while len(repos) < config.max_repos:
        batch = client.call(lambda: results.get_page(page), f"search page {page + 1}")
        client.requests["search_pages"] += 1
        if not batch:
            break
        repos.extend(batch)
        page += 1
        if len(batch) < client.gh.per_page:
            break
    repos = repos[: config.max_repos]
    for repo in repos:
        _harvest_repo(client, harvester, state, repo)
    result = harvester.finish()
    result.extra["github"] = {"requests": dict(client.requests), "rate_limit_waits": len(client.waits), "query": query}
    if commit_state:
        result.commit_state()
    return result


def _harvest_repo(client: GitHubClient, harvester: Harvester, state: HarvestState, repo: Any) -> None:
    config = harvester.config
    full = repo.full_name
    stars = int(getattr(repo, "stargazers_count", 0) or 0)
    if stars < config.min_stars:
        harvester.reject_file(full, "too_few_stars", f"{stars} stars < harvest.min_stars={config.min_stars}")
        return
    licence = _repo_licence(client, repo)
    if not harvester.licence_ok(licence, full):
        return
    repo_state = state.source(f"github:{full}")
    branch = repo.default_branch
    status, headers, data = client.conditional_get(
        f"/repos/{full}/branches/{branch}", repo_state.get("branch_etag") if config.incremental else None, f"{full} branch {branch}")
    client.requests["branches"] += 1
    if status == 304:
        harvester.result.unchanged += 1
        return
    commit = data["commit"]["sha"]
    repo_state["branch_etag"] = _header(headers, "etag")
    if config.incremental and repo_state.get("commit") == commit:
        harvester.result.unchanged += 1
        return
    tree = client.call(lambda: repo.get_git_tree(commit, recursive=True), f"{full} tree")
    client.requests["trees"] += 1
    blobs: dict[str, str] = {}
    for element in tree.tree:
        if element.type != "blob" or not element.path.endswith(".py"):
            continue
        if element.size is not None and element.size > config.max_file_bytes:
            harvester.reject_file(f"{full}:{element.path}", "file_too_large", f"{element.size} bytes > harvest.max_file_bytes={config.max_file_bytes}")
            continue
        blobs[element.path] = element.sha
        if len(blobs) >= config.max_files_per_repo:
            harvester.reject_file(full, "too_many_files", f"only the first {config.max_files_per_repo} .py files were read (harvest.max_files_per_repo)")
            break
    old_blobs: dict[str, str] = repo_state.get("blobs", {}) if config.incremental else {}
    changed = [p for p, sha in blobs.items() if old_blobs.get(p) != sha]
    harvester.result.unchanged += len(blobs) - len(changed)

    def read(path: str) -> bytes | None:
        blob = client.call(lambda: repo.get_git_blob(blobs[path]), f"{full}:{path}")
        client.requests["blobs"] += 1
        if blob.encoding == "base64":
            return base64.b64decode(blob.content)
        return str(blob.content).encode("utf-8")

    source = Repository(blobs.keys(), read, max_bytes=config.max_file_bytes)
    html = getattr(repo, "html_url", None) or f"https://github.com/{full}"

    def ref_for(path: str, text: str) -> SourceRef:
        return SourceRef(kind="github", repo=full, commit=commit, path=path, licence=spdx_header(text) or licence,
                         stars=stars, url=f"{html}/blob/{commit}/{path}")

    harvester.scan_repository(source, changed, ref_for, label=full)
    repo_state.update({"commit": commit, "blobs": blobs, "licence": licence, "stars": stars,
                       "seen_at": datetime.now(timezone.utc).isoformat(timespec="seconds")})
