"""The GitHub source end to end: PyGithub against a local server serving recorded REST responses."""

from __future__ import annotations

import pytest

from autotriton.harvesting import HarvestConfig, harvest_github
from autotriton.harvesting.github import rate_limit_wait

from harvesting_helpers import RecordedGitHub


def _config(tmp_path, **kw) -> HarvestConfig:
    # probe off: the sandbox is exercised by the local-source tests; here the subject is the transport
    return HarvestConfig(state_path=str(tmp_path / "state.json"), probe=False, min_stars=10, max_repos=10,
                         rate_limit_max_wait_s=5, **kw)


def test_github_harvest_end_to_end_with_rate_limits_and_etags(tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_recorded_test_token")
    with RecordedGitHub() as gh:
        gh.server_error_once("/search/repositories", 502)  # transient: retried by urllib3
        gh.rate_limit_once("/repos/acme/blocks/git/trees", "403")  # primary limit with x-ratelimit-reset
        gh.rate_limit_once("/repos/acme/blocks/git/blobs", "429")  # secondary limit with retry-after
        result = harvest_github(_config(tmp_path), base_url=gh.base)

        commit = gh.commit("acme/blocks")
        by_name = {p.name: p for p in result.problems}
        assert by_name["Block"].status == "runnable"
        # FeedForward was inlined from blocks/layers.py, with the constant it needs
        assert "class FeedForward" in by_name["Block"].reference_source
        assert "EXPANSION = 2" in by_name["Block"].reference_source
        assert by_name["FeedForward"].status == "runnable"
        refs = {r.path: r for r in result.sources}
        assert refs["blocks/model.py"].commit == commit
        assert refs["blocks/model.py"].licence == "MIT" and refs["blocks/model.py"].stars == 120
        assert refs["blocks/model.py"].repo == "acme/blocks"
        reasons = {(r.subject, r.reason) for r in result.rejections}
        assert ("acme/nolicense", "licence_unknown") in reasons  # no licence in search result, /license 404
        assert ("acme/gplnet", "licence_not_allowed") in reasons
        assert ("acme/blocks:blocks/latin.py", "not_utf8") in reasons
        # GitHub said NOASSERTION; the licence text itself names ISC
        assert by_name["Mish"].status == "runnable" and by_name["Mish"].licence == "ISC"
        # both rate limits were waited out (about a second each) and the requests repeated
        assert len(result.extra["github"]["requests"]) and result.extra["github"]["rate_limit_waits"] == 2
        assert [s for _, _, s in gh.requests_to("/repos/acme/blocks/git/trees/")] == [403, 200]
        assert [s for _, _, s in gh.requests_to("/search/repositories")] == [502, 200]
        assert not gh.requests_to("/repos/acme/gplnet/git")  # disallowed licence: nothing downloaded
        blobs_first = len(gh.requests_to("/git/blobs/"))
        assert blobs_first >= 4

        # A refresh: the branch answers 304 (ETag), no tree and no blob is fetched, nothing is new.
        gh.log.clear()
        again = harvest_github(_config(tmp_path), base_url=gh.base)
        assert [s for _, _, s in gh.requests_to("/repos/acme/blocks/branches/")] == [304]
        assert not gh.requests_to("/git/trees/") and not gh.requests_to("/git/blobs/")
        assert again.problems == [] and again.modules == [] and again.summary()["unchanged"] >= 1

        # A push changes one file: only that blob is downloaded.
        gh.log.clear()
        changed = (gh.repos["acme/blocks"]["blocks/layers.py"].decode().replace("torch.relu", "torch.tanh")).encode()
        gh.write("acme/blocks", "blocks/layers.py", changed)
        third = harvest_github(_config(tmp_path), base_url=gh.base)
        assert len(gh.requests_to("/git/blobs/")) == 1
        assert [p.name for p in third.problems] == ["FeedForward"]
        assert third.sources[0].commit == gh.commit("acme/blocks") != commit
        # the token was sent, never stored
        assert "ghp_recorded_test_token" not in (tmp_path / "state.json").read_text()


def test_rate_limit_longer_than_the_cap_stops_with_a_clear_error(tmp_path):
    from autotriton.harvesting import GitHubHarvestError

    with RecordedGitHub() as gh:
        body = (gh.root / "rate_limit_403.json").read_bytes()
        import time

        gh.inject["/search/repositories"] = [(403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(time.time()) + 3600)}, body)]
        with pytest.raises(GitHubHarvestError, match="rate_limit_max_wait_s"):
            harvest_github(_config(tmp_path), token="", base_url=gh.base)


def test_rate_limit_wait_reads_the_headers():
    assert rate_limit_wait(429, {"Retry-After": "7"}) == 7
    assert rate_limit_wait(403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "110"}, now=100) == pytest.approx(10.5)
    assert rate_limit_wait(403, {}, "Resource not accessible by integration") is None  # a real 403: not retried
    assert rate_limit_wait(404, {"retry-after": "1"}) is None


def test_cli_harvest_github_against_the_recorded_server(tmp_path, monkeypatch):
    import json

    from typer.testing import CliRunner

    from autotriton.flows.cli import app

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_cli_secret_value")
    with RecordedGitHub() as gh:
        args = ["--db", str(tmp_path / "g.duckdb"), "--set", f"harvest.state_path={tmp_path / 'st.json'}", "harvest", "github",
                "--query", "language:python torch", "--max-repos", "4", "--base-url", gh.base, "--no-probe", "--json"]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        summary = json.loads(result.stdout.strip().splitlines()[-1])
        assert summary["runnable"] == 3 and summary["modules"] == 3  # FeedForward, Block, Mish; latin.py is unreadable
        assert summary["file_errors"] == {"licence_not_allowed": 1, "licence_unknown": 1, "not_utf8": 1}
        assert summary["new_rows"]["problems"] == 3
        assert "ghp_cli_secret_value" not in result.output
        # the search carried the query and the star qualifier
        assert any(path.startswith("/search/repositories") for _, path, _ in gh.log)
        again = CliRunner().invoke(app, args)
        assert json.loads(again.stdout.strip().splitlines()[-1])["new_rows"]["problems"] == 0


def test_a_corrupt_state_file_is_named_in_the_error(tmp_path):
    from autotriton.harvesting import HarvestState, StateError

    bad = tmp_path / "state.json"
    bad.write_text("{not json")
    with pytest.raises(StateError, match="state.json"):
        HarvestState.load(bad)


def test_an_unreachable_api_is_named_in_the_error(tmp_path):
    import socket

    from autotriton.harvesting import GitHubHarvestError

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(GitHubHarvestError, match=f"cannot reach http://127.0.0.1:{port}"):
        harvest_github(_config(tmp_path, github_retries=0), token="", base_url=f"http://127.0.0.1:{port}")
