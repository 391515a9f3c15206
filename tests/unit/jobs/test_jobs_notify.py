"""``late_after`` and the ``notify`` table of a job, and the global ``[notify]``: parsed,
validated as one-line violations naming the key, merged key by key, and never showing a
header's value (SPEC section 7)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from jobs_helpers import NOW, Load, WriteJob

from cronctl.config import read_config
from cronctl.jobs.build import BuildContext, RawJob, build_job
from cronctl.jobs.decorators import cron_job
from cronctl.jobs.notify import DEFAULT_ON, NotifySpec, read_notify, redact_webhook
from cronctl.jobs.registry import ServiceRegistry
from cronctl.options import GlobalOptions
from cronctl.store.snapshot import definition_snapshot, dumps

SECRET = "tok-3f9a-very-secret"


def test_a_full_notify_table(write: WriteJob, load: Load) -> None:
    write("a.toml", f'''
        [jobs.a]
        every = "1m"
        command = ["true"]
        late_after = "30s"

        [jobs.a.notify]
        on = ["Dead-Letter", "late", "recovered", "late"]
        webhook = "https://hooks.example.org/services/T0/B1?x=1"
        command = ["/usr/sbin/sendmail", "-t"]

        [jobs.a.notify.headers]
        Authorization = "Bearer {SECRET}"
        ''')
    result = load()
    assert result.violations == ()
    [job] = result.jobs
    assert job.late_after == timedelta(seconds=30)
    assert job.notify == NotifySpec(on=("dead_letter", "late", "recovered"),
                                    webhook="https://hooks.example.org/services/T0/B1?x=1",
                                    headers=(("Authorization", f"Bearer {SECRET}"),),
                                    command=("/usr/sbin/sendmail", "-t"))
    # shown or stored, a header value is never there, nor the webhook's path
    for text in (repr(job.notify), str(job), dumps(definition_snapshot(job))):
        assert SECRET not in text and "T0/B1" not in text
    assert definition_snapshot(job)["notify"]["headers"] == {"Authorization": "***"}


def test_unset_means_the_global_table(write: WriteJob, load: Load) -> None:
    write("a.toml", '[jobs.a]\nevery = "1m"\ncommand = ["true"]\n')
    [job] = load().jobs
    assert (job.notify, job.late_after) == (None, None)
    assert NotifySpec().events == frozenset(DEFAULT_ON)
    assert NotifySpec(on=()).events == frozenset()


def test_a_job_table_overrides_the_global_one_key_by_key() -> None:
    base = NotifySpec(on=("failed",), webhook="https://a/x", headers=(("X", "1"),))
    job = NotifySpec(webhook="https://b/y", command=("mail",))
    assert job.over(base) == NotifySpec(on=("failed",), webhook="https://b/y",
                                        headers=(("X", "1"),), command=("mail",))
    assert NotifySpec().over(base) == base
    assert not NotifySpec(on=("failed",)).active and job.active


@pytest.mark.parametrize(("body", "key", "text"), [
    ('on = ["dead_leter"]', "notify.on", "unknown event 'dead_leter' (did you mean "
                                        "'dead_letter'?)"),
    ('on = "failed"', "notify.on", "must be an array of event names"),
    ("on = [3]", "notify.on", "every event must be a string"),
    ('webhook = "ftp://example.org/x"', "notify.webhook", "scheme 'ftp' is not http or https"),
    ('webhook = "hooks.example.org/x"', "notify.webhook", "write a full http(s) URL"),
    ('webhook = "https://"', "notify.webhook", "not an http(s) URL"),
    ("webhook = 5", "notify.webhook", "must be an http(s) URL string"),
    ('command = "mail root"', "notify.command", "must be an argv: a non-empty array"),
    ("command = []", "notify.command", "must be an argv"),
    ('command = ["mail", 3]', "notify.command", "must be an argv"),
    ("headers = 3", "notify.headers", "must be a table of header names"),
    (f'headers = {{ "Bad Name" = "{SECRET}" }}', "notify.headers",
     "'Bad Name' is not a valid HTTP header name"),
    ("headers = { Authorization = 12345 }", "notify.headers",
     "the value of header 'Authorization' must be a string"),
    ('headers = { X = "a\\nb" }', "notify.headers", "the value of header 'X' must be one line"),
    ("webhok = 1", "notify.webhok", "unknown key (did you mean 'webhook'?)"),
    # What urllib or subprocess would refuse at every delivery is refused when read.
    ('webhook = "https://h/a b"', "notify.webhook", "space or a control character"),
    ('webhook = "https://h/\\u0000"', "notify.webhook", "space or a control character"),
    ('webhook = "https://h/caf\u00e9"', "notify.webhook", "not ASCII; percent-encode"),
    ('headers = { X = "a\\u0000b" }', "notify.headers", "must be one line of printable"),
    ('headers = { X = "a\\u001bb" }', "notify.headers", "must be one line of printable"),
    ('command = ["mail", "a\\u0000b"]', "notify.command", "NUL character"),
])
def test_notify_violations(write: WriteJob, load: Load, body: str, key: str, text: str
                           ) -> None:
    write("a.toml", f'[jobs.a]\nevery = "1m"\ncommand = ["true"]\n\n[jobs.a.notify]\n{body}\n')
    [violation] = load().violations
    assert (violation.job, violation.key) == ("a", key)
    assert text in violation.message, violation.message
    assert violation.source.endswith("a.toml:5")
    assert "\n" not in str(violation) and SECRET not in str(violation)
    assert "12345" not in violation.message


def test_notify_must_be_a_table_and_late_after_a_duration(write: WriteJob, load: Load) -> None:
    write("a.toml", '[jobs.a]\nevery = "1m"\ncommand = ["true"]\nnotify = "yes"\n'
                    'late_after = "0s"\n')
    found = {(v.key, v.source.rsplit(":", 1)[-1]) for v in load().violations}
    assert found == {("notify", "4"), ("late_after", "5")}


def test_every_problem_of_one_table_is_reported(write: WriteJob, load: Load) -> None:
    write("a.toml", '[jobs.a]\nevery = "1m"\ncommand = ["true"]\n'
                    'notify = { on = ["nope"], webhook = "x", command = [] }\n')
    assert {v.key for v in load().violations} == {"notify.on", "notify.webhook",
                                                   "notify.command"}


def test_the_decorator_takes_late_after_and_notify() -> None:
    @cron_job(id="d", every="1m", late_after="2m", notify={"on": ["late"]})
    def handler() -> None: ...

    [spec] = handler.__cronctl_cron_jobs__  # type: ignore[attr-defined]
    values = {k: v for k, v in spec.values.items() if k != "id"}
    raw = RawJob(id="d", values={**values, "command": ["true"]}, sources={}, source="x")
    built = build_job(raw, BuildContext(now=NOW, registry=ServiceRegistry()))
    assert built.violations == []
    assert built.job is not None
    assert (built.job.late_after, built.job.notify) == (timedelta(minutes=2),
                                                       NotifySpec(on=("late",)))


def test_redact_webhook() -> None:
    assert redact_webhook("https://h.example.org/services/T0?k=1") == "https://h.example.org/…"
    assert redact_webhook("http://u:pw@127.0.0.1:8080/") == "http://127.0.0.1:8080"
    assert redact_webhook("http://[::1]:9/x") == "http://[::1]:9/…"
    assert read_notify({"webhook": "http://a:99999/x"})[1][0][0] == "webhook"


def test_the_global_notify_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CRONCTL_CONFIG", raising=False)
    monkeypatch.delenv("CRONCTL_DATABASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    Path("cronctl.toml").write_text(f'''[scheduler]
node_id = "a"

[notify]
on = ["failed"]
webhook = "https://hooks.example.org/x"

[notify.headers]
Authorization = "Bearer {SECRET}"
''')
    result = read_config(GlobalOptions())
    assert result.violations == ()
    assert result.config.notify == NotifySpec(on=("failed",),
                                              webhook="https://hooks.example.org/x",
                                              headers=(("Authorization", f"Bearer {SECRET}"),))
    assert SECRET not in repr(result.config)
    Path("cronctl.toml").write_text(f'''[notify]
on = ["faild"]
command = "mail"
[notify.headers]
"a b" = "{SECRET}"
''')
    found = {(v.key, v.source.rsplit(":", 1)[-1], v.message) for v in
             read_config(GlobalOptions()).violations}
    assert found == {
        ("notify.on", "2", "unknown event 'faild' (did you mean 'failed'?); events: "
         "succeeded, failed, dead_letter, abandoned, cancelled, recovered, missed, skipped, "
         "late, long_running, fenced, anomaly"),
        ("notify.command", "3", 'must be an argv: a non-empty array of strings, e.g. '
         '["/usr/sbin/sendmail", "-t"]'),
        ("notify.headers", "4", "'a b' is not a valid HTTP header name"),
    }
    assert read_config(GlobalOptions()).config.notify == NotifySpec()


def test_every_notify_key_and_event_is_in_the_file_format_page() -> None:
    from cronctl.jobs.notify import EVENTS, NOTIFY_KEYS

    man = (Path(__file__).resolve().parents[3] / "man" / "cronctl.toml.5").read_text()
    section = man.split(".SS [notify]", 1)[1].split(".SH", 1)[0]
    for key in NOTIFY_KEYS:
        assert f".B {key}\n" in section, key
    for name in EVENTS:
        assert f"\\fB{name}\\fR" in section, name
    keys = man.split(".SS Keys", 1)[1]
    assert ".B late_after\n" in keys and ".B notify\n" in keys
