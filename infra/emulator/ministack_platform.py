"""Runs MiniStack with parts of the AWS platform that it leaves out and that resetnotify's
emulator stacks (make emulator-e2e, make gameday) rely on.

Dev only: infra/emulator/emulator.sh starts this file with MiniStack's own Python in place of the
`ministack` command; no Lambda links it. It wraps a few of MiniStack 1.5.33's internal functions
(pinned in infra/install-tools.sh; a MiniStack without them makes this file stop at start, saying
which) and then runs MiniStack's own entry point.

1. A DynamoDB stream mapping's retries. MiniStack advances past a batch whose invocation
   answered batchItemFailures, and retries a failed invocation until MaximumRecordAgeInSeconds
   whatever MaximumRetryAttempts says (lambda_svc.py, _poll_dynamodb_streams). Here both are a
   failed attempt: MiniStack keeps its position and retries the batch, and once
   MaximumRetryAttempts retries have failed, the batch is described to the mapping's OnFailure
   destination (MiniStack's own RetryAttemptsExhausted record) and passed, as AWS does. One
   difference stays: AWS resumes at the first failed record, MiniStack from the batch's first,
   so the records before it are delivered again (the audit function writes each entry once
   whatever it is given).
2. AWS/Lambda metrics for every invocation. MiniStack publishes Invocations, Errors, Throttles
   and Duration for the Invoke API only; here every path (API Gateway, stream and queue
   mappings, schedules) publishes them once, and a stream batch its IteratorAge.
3. AWS/SQS metrics: NumberOfMessagesSent per queue on every send (SendMessage,
   SendMessageBatch, a mapping's OnFailure record), and every minute each queue's
   ApproximateNumberOfMessagesVisible, ApproximateNumberOfMessagesDelayed,
   ApproximateAgeOfOldestMessage and a zero NumberOfMessagesSent.
4. The template's burn-rate pages. MiniStack's CloudFormation refuses an AWS::CloudWatch::Alarm
   with Metrics (metric math) and has no AWS::CloudWatch::CompositeAlarm. Here a math alarm is
   stored with its Metrics (DescribeAlarms returns them; MiniStack's own evaluator skips an
   alarm with no MetricName) and a composite alarm goes through MiniStack's PutCompositeAlarm,
   so the stack deploys as on AWS and infra/alarmeval evaluates both.
8. The SAM transform's parameter values. MiniStack expands a SAM template with none, so SAM
   resolves what it resolves itself (a DeploymentPreference's Enabled) from the defaults; here
   it gets the stack's values, as CloudFormation gives its transform, so Target=emulator leaves
   the gradual deploys (CodeDeploy, which MiniStack lacks) out.
9. Bucket policies CloudFormation writes. MiniStack's provisioner writes an AWS::S3::BucketPolicy
   unchecked, and checks nothing without AUTH=true. Here a stack operation acts as its caller
   (the principal that called CreateStack, UpdateStack, ExecuteChangeSet or DeleteStack, or the
   RoleARN it passed), as CloudFormation does: replacing or deleting a bucket's policy is
   refused, and the resource fails, when the bucket's current policy denies that principal
   s3:PutBucketPolicy (s3:DeleteBucketPolicy), with aws:CalledVia cloudformation.amazonaws.com
   and TLS. The bucket owner's root user is never refused, as on AWS. Identity policies are not
   evaluated.
10. Invocations in flight through a deploy. MiniStack's UpdateFunctionCode and
   UpdateFunctionConfiguration kill the function's warm workers at once, failing the
   invocations they are running (Runtime.ExitError); on AWS each execution environment finishes
   its invocation. Here a worker taken out of the pool that is running one is stopped once it
   ended (or after the function's timeout), from a thread, so the update does not wait.

And costs that grow with the history or a burst, which would otherwise starve a stack under one:

5. Log streams. MiniStack opens a log stream per invocation, and FilterLogEvents (the EMF
   bridge's, every second) visits every stream of the group under the logs lock. Here a
   function's invocations share a stream per execution slot (the invocations writing at once),
   as AWS shares one per execution environment.
6. Metric eviction. MiniStack copies every datapoint ever stored on each CloudWatch request to
   drop those older than two weeks; here at most once every 10 minutes.
7. Alarm evaluation. MiniStack evaluates every alarm over every datapoint of its metric on each
   PutMetricData, on the event loop that serves every request (a burst's EMF puts, each second,
   kept it busy there and starved the functions' calls). Here a PutMetricData evaluates only the
   alarms of the metrics it put, each at most every 10 s, and a thread evaluates every alarm each
   minute; each alarm skips, for good, the datapoints before its window (the window only moves
   forward; a bucket only grows), with MiniStack's own verdicts otherwise.
11. Stream pollers. MiniStack's one poll thread runs a DynamoDB stream batch's invocation
   inline, so the SQS mappings (dispatch) start no batch until it returns. Here the stream
   mappings poll on a thread of their own, each batch still one after the other, as AWS polls a
   shard apart from any queue.
12. Execution environments. MiniStack starts a new environment (a process of the function's
   binary, after hashing its code) for every invocation that finds none free, with no bound: a
   burst of 75 requests a second on a loaded 2-core machine starts hundreds at once, each
   starting slower than the last, and answers almost none. Here a function has at most
   _ENVS_PER_FUNCTION; an invocation that finds them all busy waits for one, first come first
   served (up to a Lambda's longest run, _ENV_WAIT, then starts its own as MiniStack does), as
   AWS's capacity would serve it. A waiting invocation is woken only by a hand-over: hundreds
   wait in a burst. A waiting invocation is not running, so it leaves MiniStack's count of the
   account's concurrency until it has one (counted, a burst's queue was answered 429 where AWS,
   at its speed, runs a few at once); the account's quota is AWS's default, 1000, not
   MiniStack's machine-scaled one (573 here), unless LAMBDA_ACCOUNT_CONCURRENCY says otherwise.
13. Event sources beside callers. MiniStack serves every request of every service on one
   event loop in one process, so a burst's admissions and the work they queue (dispatch's SQS
   batches, the audit stream's) share one core that AWS gives each service apart, and the event
   sources can take most of it from callers with timeouts. Here the SQS mappings and the stream thread take no batch while an API
   call waits for an environment, for up to _YIELD_MAX at a time, then one pass each: their
   records wait in the queue and the stream (as on AWS, where the poller's pace is not the
   caller's), never dropped.

`python ministack_platform.py --selftest` checks 3 and 5 to 13 without starting MiniStack.
"""

import collections
import contextvars
import json
import os
import re
import sys
import threading
import time
from urllib.parse import parse_qs

from ministack.core import iam_evaluator, lambda_runtime
from ministack.services import cloudformation, cloudwatch, lambda_svc, sqs
from ministack.services.cloudformation import changesets, engine, handlers, provisioners

# Each internal this file wraps or reads; checked before anything starts.
_NEEDED = {
    lambda_svc: ["_execute_function", "_emit_lambda_metrics", "_iter_all_esms", "_poll_dynamodb_streams", "_poll_sqs", "logger",
                 "_poll_loop", "_esm_wake", "_esms", "_get_func_record_for_qualifier",
                 "_send_ddb_stream_failure_record", "_request_account_id", "_emit_lambda_logs", "new_uuid"],
    sqs: ["_HANDLERS", "_queues"],
    cloudwatch: ["record_metric", "_put_composite_alarm", "cloudformation_delete_metric_alarm", "_composite_alarms",
                 "_metrics", "_evict_old_metrics", "_evaluate_alarm", "_calc_stats",
                 "_evaluate_all_alarms", "_store_datum", "_alarms",
                 "_stat_value", "_record_history", "_dispatch_alarm_actions", "_evaluate_parent_alarms"],
    provisioners: ["_cw_metric_alarm_record", "_RESOURCE_HANDLERS", "_physical_name", "_s3"],
    provisioners._s3: ["_bucket_policies", "_bucket_owner_account", "_buckets"],
    cloudformation: ["handle_request"],
    lambda_runtime: ["acquire_worker", "release_worker", "_workers", "_lock", "_worker_key"],
    iam_evaluator: ["request_caller_arn", "evaluate_resource_policy", "EvalContext"],
    engine: ["_apply_transforms", "_transform_parameters"],
    changesets: ["_apply_transforms"],
    handlers: ["_apply_transforms"],
    lambda_runtime: ["invalidate_worker", "kill_workers", "_workers", "_lock"],
}

_depth = threading.local()
_attempts: dict = {}
_attempts_lock = threading.Lock()


def _check():
    missing = [f"{m.__name__}.{n}" for m, names in _NEEDED.items() for n in names if not hasattr(m, n)]
    if missing:
        sys.exit("ministack_platform: this MiniStack lacks " + ", ".join(missing) +
                 "; infra/install-tools.sh pins the version it was written for")


def _metric(namespace, name, value, unit, dims):
    cloudwatch.record_metric(namespace, name, value, unit, dims)


def _stream_records(event):
    """The records of a DynamoDB stream batch, or None for any other event."""
    recs = event.get("Records") if isinstance(event, dict) else None
    if isinstance(recs, list) and recs and isinstance(recs[0], dict) and recs[0].get("eventSource") == "aws:dynamodb":
        return recs
    return None


def _failed_items(result):
    body = result.get("body")
    if isinstance(body, (str, bytes)):
        import json
        try:
            body = json.loads(body)
        except ValueError:
            return []
    if isinstance(body, dict):
        return body.get("batchItemFailures") or []
    return []


def _stream_mapping(config, records):
    """The event source mapping that delivered records to the function of config."""
    arn = records[0].get("eventSourceARN", "")
    name, fn_arn = config.get("FunctionName", ""), config.get("FunctionArn", "")
    for _acct, _region, esm in lambda_svc._iter_all_esms():
        target = esm.get("FunctionName", "")
        short = target.split(":function:")[-1].split(":")[0]
        if target in (name, fn_arn) or short == name:
            if not arn or esm.get("EventSourceArn") == arn:
                return esm
    return None


def _stream_attempt(func, config, records, result):
    """Applies the mapping's retry policy to a stream batch's invocation: returns the result
    MiniStack should act on (an error keeps its position; success moves past the batch)."""
    failed = bool(result.get("error")) or bool(_failed_items(result))
    esm = _stream_mapping(config, records)
    if esm is None:
        return result
    key = (esm.get("UUID"), str(records[0].get("dynamodb", {}).get("SequenceNumber", "")))
    with _attempts_lock:
        if not failed:
            _attempts.pop(key, None)
            return result
        n = _attempts.get(key, 0) + 1
        _attempts[key] = n
    limit = int(esm.get("MaximumRetryAttempts", -1))
    if limit >= 0 and n > limit:
        with _attempts_lock:
            _attempts.pop(key, None)
        lambda_svc._send_ddb_stream_failure_record(esm, func, records, esm.get("EventSourceArn", ""), result,
                                                   "RetryAttemptsExhausted")
        return dict(result, error=False)
    if result.get("error"):
        return result
    failures = _failed_items(result)
    return dict(result, error=True, function_error="Unhandled", body={
        "errorType": "BatchItemFailures",
        "errorMessage": f"{len(failures)} of {len(records)} records failed (attempt {n}); the batch is retried",
    })


def _wrap_execute(orig):
    def execute(func, event):
        outer = getattr(_depth, "n", 0) == 0
        _depth.n = getattr(_depth, "n", 0) + 1
        started = time.time()
        try:
            result = orig(func, event)
        finally:
            _depth.n -= 1
        if not outer or not isinstance(result, dict) or result.get("throttle"):
            return result
        config = func.get("config") or func
        dims = {"FunctionName": config.get("FunctionName", "unknown")}
        try:
            _metric("AWS/Lambda", "Invocations", 1, "Count", dims)
            _metric("AWS/Lambda", "Errors", 1 if result.get("error") else 0, "Count", dims)
            _metric("AWS/Lambda", "Throttles", 0, "Count", dims)
            _metric("AWS/Lambda", "Duration", (time.time() - started) * 1000.0, "Milliseconds", dims)
        except Exception:  # instrumentation never breaks an invocation
            pass
        records = _stream_records(event)
        if records is None:
            return result
        try:
            newest = float(records[-1].get("dynamodb", {}).get("ApproximateCreationDateTime", started))
            _metric("AWS/Lambda", "IteratorAge", max(0.0, (started - newest) * 1000.0), "Milliseconds", dims)
        except (TypeError, ValueError):
            pass
        return _stream_attempt(func, config, records, result)
    return execute


def _wrap_emit(orig):
    # The Invoke API's own metrics: only its throttles, which never reach _execute_function's
    # result here; every other figure is published once by execute above.
    def emit(function_name, duration_ms, error, throttle):
        if throttle:
            orig(function_name, duration_ms=duration_ms, error=error, throttle=throttle)
    return emit


def _queue_name(url_or_arn):
    return str(url_or_arn).rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]


def _wrap_send(orig, batch):
    def send(data, qurl):
        result = orig(data, qurl)
        n = len((result or {}).get("Successful", [])) if batch else 1
        if n:
            _metric("AWS/SQS", "NumberOfMessagesSent", n, "Count",
                    {"QueueName": _queue_name(data.get("QueueUrl", qurl))})
        return result
    return send


def _wrap_failure_record(orig):
    def send(esm, func_rec, batch, stream_arn, result, condition):
        orig(esm, func_rec, batch, stream_arn, result, condition)
        dest = ((esm.get("DestinationConfig") or {}).get("OnFailure") or {}).get("Destination", "")
        if dest.startswith("arn:aws:sqs:"):
            _metric("AWS/SQS", "NumberOfMessagesSent", 1, "Count", {"QueueName": _queue_name(dest)})
    return send


def _queue_gauges():
    """Every minute, each queue's visible messages and the age of its oldest, as SQS publishes
    them."""
    while True:
        time.sleep(60)
        now = time.time()
        for key, q in list(sqs._queues._data.items()):
            acct = key[0] if isinstance(key, tuple) and len(key) >= 2 else None
            token = lambda_svc._request_account_id.set(acct) if acct else None
            try:
                _queue_gauge(q, _queue_name((q.get("attributes") or {}).get("QueueArn") or q.get("name") or key), now)
            except Exception:
                pass
            finally:
                if token is not None:
                    lambda_svc._request_account_id.reset(token)


def _queue_gauge(q, name, now):
    """One queue's gauges at now. Delayed: not yet visible and never received (a send's
    DelaySeconds), as MiniStack's own attribute counts them; in flight is neither."""
    msgs = list(q.get("messages", []))
    visible = sum(1 for m in msgs if m.get("visible_at", now) <= now)
    delayed = sum(1 for m in msgs if m.get("visible_at", now) > now and m.get("receive_count", 0) == 0)
    oldest = max((now - m.get("sent_at", now) for m in msgs), default=0.0)
    _metric("AWS/SQS", "ApproximateNumberOfMessagesVisible", visible, "Count", {"QueueName": name})
    _metric("AWS/SQS", "ApproximateNumberOfMessagesDelayed", delayed, "Count", {"QueueName": name})
    _metric("AWS/SQS", "ApproximateAgeOfOldestMessage", round(oldest), "Seconds", {"QueueName": name})
    # A zero beside the sends' counts, as SQS reports an active queue's quiet
    # periods: an alarm on sends then reads "none sent", not "no data".
    _metric("AWS/SQS", "NumberOfMessagesSent", 0, "Count", {"QueueName": name})


def _math_query(q):
    """A template's metric-math query as DescribeAlarms gives it: Period an int, ReturnData a bool."""
    q = dict(q)
    if "ReturnData" in q:
        q["ReturnData"] = str(q["ReturnData"]).lower() not in ("false", "0", "no")
    if "Period" in q:
        q["Period"] = int(q["Period"])
    stat = q.get("MetricStat")
    if isinstance(stat, dict):
        stat = dict(stat)
        stat["Period"] = int(stat.get("Period", 60))
        q["MetricStat"] = stat
    return q


def _wrap_alarm_record(orig):
    def record(name, props):
        metrics = props.get("Metrics")
        if not metrics:
            return orig(name, props)
        plain = {k: v for k, v in props.items() if k != "Metrics"}
        alarm = orig(name, dict(plain, MetricName="math", Namespace="math"))
        for key in ("MetricName", "Namespace", "Statistic", "ExtendedStatistic", "Period", "Unit"):
            alarm[key] = None
        alarm["Dimensions"] = []
        alarm["Metrics"] = [_math_query(q) for q in metrics]
        return alarm
    return record


def _composite_put(name, props):
    data = {k: props[k] for k in ("AlarmRule", "AlarmDescription", "ActionsEnabled", "AlarmActions",
                                  "OKActions", "InsufficientDataActions") if k in props}
    data["AlarmName"] = name
    status, _headers, body = cloudwatch._put_composite_alarm({}, data, False, is_json=True)
    if status != 200:
        raise ValueError(f"AWS::CloudWatch::CompositeAlarm {name}: {body.decode(errors='replace')}")
    return name, {"Arn": cloudwatch._composite_alarms[name]["AlarmArn"]}


def _composite_create(logical_id, props, stack_name):
    return _composite_put(props.get("AlarmName") or provisioners._physical_name(stack_name, logical_id, max_len=255), props)


def _composite_update(physical_id, old_props, new_props, stack_name, logical_id=None):
    return _composite_put(physical_id, new_props)


def _composite_delete(physical_id, props):
    cloudwatch._composite_alarms.pop(physical_id, None)


_slots: dict = {}
_slots_lock = threading.Lock()
_slot_stream = threading.local()
_ENV_SEED = None


def _wrap_new_uuid(orig):
    # _emit_lambda_logs names the invocation's stream with new_uuid(); while it runs, this
    # thread's slot stream stands in for it. Every other caller gets a fresh UUID.
    def new_uuid():
        forced = getattr(_slot_stream, "name", None)
        return forced if forced else orig()
    return new_uuid


def _wrap_emit_logs(orig):
    def emit(func, *args, **kw):
        config = func.get("config") or func
        fn = config.get("FunctionName", "unknown")
        with _slots_lock:
            busy = _slots.setdefault(fn, set())
            slot = next(i for i in range(len(busy) + 1) if i not in busy)
            busy.add(slot)
        import hashlib
        _slot_stream.name = hashlib.sha256(f"{_ENV_SEED}/{fn}/{slot}".encode()).hexdigest()[:32]
        try:
            return orig(func, *args, **kw)
        finally:
            _slot_stream.name = None
            with _slots_lock:
                _slots[fn].discard(slot)
    return emit


_EVICT_EVERY = 600.0
_evicted_at = [0.0]


def _wrap_evict(orig):
    def evict():
        now = time.time()
        if now - _evicted_at[0] < _EVICT_EVERY:
            return
        _evicted_at[0] = now
        orig()
    return evict


_cursors: dict = {}


def _window_points(alarm, cutoff):
    """The datapoints of the alarm's metric (every dimension set, as MiniStack pools them) stamped
    at or after cutoff, and whether the metric has any datapoint. Each (alarm, bucket) remembers
    how many leading points lie before a past cutoff: those lie before every later one."""
    ns, mn = alarm.get("Namespace"), alarm.get("MetricName")
    span = alarm.get("Period", 60) * alarm.get("EvaluationPeriods", 1)
    recent, any_pts = [], False
    for key, pts in cloudwatch._metrics.items():
        if key[0] != ns or key[1] != mn:
            continue
        any_pts = any_pts or bool(pts)
        ck = (alarm.get("AlarmName"), span, key)
        held, i = _cursors.get(ck, (None, 0))
        if held is not pts:  # a new bucket, or one eviction rebuilt
            i = 0
        n = len(pts)
        while i < n and pts[i]["Timestamp"] < cutoff:
            i += 1
        _cursors[ck] = (pts, i)
        recent.extend(p for p in pts[i:n] if p["Timestamp"] >= cutoff)
    return recent, any_pts


def _evaluate_alarm(alarm):
    """MiniStack's _evaluate_alarm (1.5.33), over the window's points only."""
    cw = cloudwatch
    if not alarm.get("Namespace") or not alarm.get("MetricName"):
        return
    cutoff = time.time() - alarm.get("Period", 60) * alarm.get("EvaluationPeriods", 1)
    recent, any_pts = _window_points(alarm, cutoff)
    if not any_pts or not recent:
        return
    stat_name = alarm.get("ExtendedStatistic") or alarm.get("Statistic", "Average")
    val = cw._stat_value(cw._calc_stats(recent), stat_name, recent)
    if val is None:
        return
    threshold, op = alarm.get("Threshold", 0), alarm.get("ComparisonOperator", "")
    breaching = {
        "GreaterThanOrEqualToThreshold": val >= threshold, "GreaterThanThreshold": val > threshold,
        "LessThanThreshold": val < threshold, "LessThanOrEqualToThreshold": val <= threshold,
        "GreaterThanUpperThreshold": val > threshold, "LessThanLowerThreshold": val < threshold,
        "LessThanLowerOrGreaterThanUpperThreshold": val < threshold,
    }.get(op, False)
    old_state, new_state = alarm["StateValue"], "ALARM" if breaching else "OK"
    if old_state != new_state:
        reason = f"Threshold Crossed: {stat_name} {val} {op} {threshold}"
        alarm["StateValue"], alarm["StateReason"] = new_state, reason
        alarm["StateUpdatedTimestamp"] = int(time.time())
        cw._record_history(alarm["AlarmName"], old_state, new_state, reason)
        cw._dispatch_alarm_actions(alarm, old_state, new_state, reason)
        cw._evaluate_parent_alarms(alarm)


_touched = threading.local()
_put_evaluated: dict = {}
_PUT_EVAL_EVERY = 10.0


def _wrap_store_datum(orig):
    # Remembers, for this request's thread, the metrics a PutMetricData stored datums of.
    def store(namespace, metric_name, *args, **kw):
        getattr(_touched, "metrics", None) is None and setattr(_touched, "metrics", set())
        _touched.metrics.add((namespace, metric_name))
        return orig(namespace, metric_name, *args, **kw)
    return store


def _evaluate_put_alarms():
    """PutMetricData's evaluation: the alarms of the metrics it put, each at most every
    _PUT_EVAL_EVERY seconds."""
    touched, _touched.metrics = getattr(_touched, "metrics", None) or set(), set()
    now = time.time()
    for alarm in cloudwatch._alarms.values():
        key = (alarm.get("Namespace"), alarm.get("MetricName"))
        name = alarm.get("AlarmName")
        if key not in touched or now - _put_evaluated.get(name, 0.0) < _PUT_EVAL_EVERY:
            continue
        _put_evaluated[name] = now
        try:
            cloudwatch._evaluate_alarm(alarm)
        except Exception:
            pass


def _evaluate_every_minute(orig_all):
    while True:
        time.sleep(60)
        for key, alarm in list(cloudwatch._alarms._data.items()):
            acct = key[0] if isinstance(key, tuple) and len(key) >= 2 else None
            token = lambda_svc._request_account_id.set(acct) if acct else None
            try:
                cloudwatch._evaluate_alarm(alarm)
            except Exception:
                pass
            finally:
                if token is not None:
                    lambda_svc._request_account_id.reset(token)


_ENVS_PER_FUNCTION = 16
_ACCOUNT_QUOTA = 1000  # AWS's default concurrent executions per account and Region
_ENV_WAIT = 900.0  # a Lambda invocation's longest run: starting more under a burst is the collapse
_env_lock = threading.Lock()
_env_waiters: dict = {}  # worker key -> the invocations waiting, first come first served
_env_tries = [0]  # leases tried under the cap
_PLACE = object()  # handed to a waiting invocation: an environment died, start one in its place


def _wrap_acquire_worker(orig):
    def capped(func_name, config, code_zip, qualifier, key):
        _env_tries[0] += 1
        worker, reason = orig(func_name, config, code_zip, qualifier=qualifier, max_concurrency=_ENVS_PER_FUNCTION)
        if worker is not None:
            worker.platform_key = key
        return worker, reason

    def acquire(func_name, config, code_zip, qualifier="$LATEST", max_concurrency=None):
        if max_concurrency:
            return orig(func_name, config, code_zip, qualifier=qualifier, max_concurrency=max_concurrency)
        key = lambda_runtime._worker_key(func_name, config, qualifier)
        me = [threading.Event(), None, _synchronous()]
        with _env_lock:
            waiting = _env_waiters.setdefault(key, collections.deque())
            if not waiting:
                worker, reason = capped(func_name, config, code_zip, qualifier, key)
                if worker is not None:
                    return worker, reason
            waiting.append(me)
        _running(-1)
        try:
            return _wait_for_environment(orig, capped, me, waiting, func_name, config, code_zip, qualifier, key)
        finally:
            _running(+1)
    return acquire


def _running(n):
    """Adds n to MiniStack's count of the account's running invocations: one waiting for an
    environment is not running (MiniStack counted it before it looked for one)."""
    with lambda_svc._inflight_lock:
        lambda_svc._inflight_total = max(0, lambda_svc._inflight_total + n)


def _wait_for_environment(orig, capped, me, waiting, func_name, config, code_zip, qualifier, key):
    give_up = time.monotonic() + _ENV_WAIT
    while True:  # woken only by a hand-over (never polling: hundreds may wait)
        me[0].wait(max(0.0, give_up - time.monotonic()))
        with _env_lock:
            got, me[1] = me[1], None
            me[0].clear()
            if got is _PLACE:
                got, _ = capped(func_name, config, code_zip, qualifier, key)
                if got is None and time.monotonic() < give_up:
                    waiting.appendleft(me)
                    continue
            elif got is None:
                waiting.remove(me)
            if got is not None:
                return got, "reused"
            break
    return orig(func_name, config, code_zip, qualifier=qualifier)  # past the wait: as MiniStack would


def _wrap_release_worker(orig):
    # A released environment goes to the longest-waiting invocation of its function, leased on;
    # one that died (released as None, or no longer in its pool) leaves a place, offered to the
    # first waiter (of each function, when it is not known whose).
    def release(worker):
        key = getattr(worker, "platform_key", None)
        with _env_lock:
            pooled = worker is not None and worker in lambda_runtime._workers.get(key, ())
            for k, waiting in _env_waiters.items():
                if waiting and (k == key or worker is None):
                    me = waiting.popleft()
                    me[1] = worker if pooled else _PLACE  # a removed environment leaves a place
                    me[0].set()
                    if pooled:
                        worker.last_used = time.time()
                        return
        orig(worker)
    return release


def _synchronous():
    """Whether this thread's invocation has a caller waiting on it (an API call), not an event
    source's batch (MiniStack's SQS mappings, the stream thread below)."""
    return not threading.current_thread().name.startswith(("ministack-esm", "ministack-platform-streams"))


_YIELD_MAX = 30.0  # the longest the event sources pause for callers waiting on an environment
_held: dict = {}  # event source kind -> since when it yields (monotonic)


def _yield_to_callers(kind):
    """True while the event sources of kind ("sqs", "streams") should take no batch: a
    synchronous invocation waits for an environment, and they have not yielded _YIELD_MAX yet
    (then one pass, and they yield again)."""
    with _env_lock:
        waiting = any(me[2] for queue in _env_waiters.values() for me in queue)
    if not waiting:
        _held.pop(kind, None)
        return False
    since = _held.setdefault(kind, time.monotonic())
    if time.monotonic() - since < _YIELD_MAX:
        return True
    _held.pop(kind, None)
    return False


def _wrap_poll_sqs(orig):
    def poll():
        return False if _yield_to_callers("sqs") else orig()
    return poll


_stream_poll = [None]  # MiniStack's stream poller, which only the thread below runs
_STREAM_IDLE = 0.25


def _streams_apart():
    """The shared poll thread's stream pass: nothing, the streams have their own thread."""
    return False


def _poll_streams_forever():
    while True:
        if _yield_to_callers("streams"):
            time.sleep(_STREAM_IDLE)
            continue
        try:
            busy = _stream_poll[0]()
        except Exception as e:  # as MiniStack's poll thread: logged, and polled again
            lambda_svc.logger.error("ESM DynamoDB streams poller error: %s", e)
            busy = False
        if not busy:
            time.sleep(_STREAM_IDLE)


# The principal the stack operation of this request (and of the deploy task it schedules, which
# copies this context) acts as.
_stack_caller: contextvars.ContextVar = contextvars.ContextVar("resetnotify_stack_caller", default="")
_ASSUMED = re.compile(r"arn:(aws[a-z-]*):sts::(\d{12}):assumed-role/([^/]+)/.+")


def _role_arn_param(headers, body):
    """The RoleARN a CloudFormation request passes (query or JSON protocol), or ""."""
    if not body:
        return ""
    text = body.decode("utf-8", errors="replace")
    if "json" in headers.get("content-type", ""):
        try:
            return str(json.loads(text).get("RoleARN") or "")
        except (ValueError, AttributeError):
            return ""
    return (parse_qs(text).get("RoleARN") or [""])[0]


def _wrap_cfn_request(orig):
    async def handle(method, path, headers, body, query_params):
        caller = _role_arn_param(headers, body) or iam_evaluator.request_caller_arn(headers, query_params)
        token = _stack_caller.set(caller)
        try:
            return await orig(method, path, headers, body, query_params)
        finally:
            _stack_caller.reset(token)
    return handle


def _bucket_policy_refusal(bucket, action):
    """Why the stack's caller may not make action on bucket's policy, or "" if it may."""
    caller = _stack_caller.get()
    m = _ASSUMED.fullmatch(caller)
    principal = f"arn:{m[1]}:iam::{m[2]}:role/{m[3]}" if m else caller
    acct = re.fullmatch(r"arn:aws[a-z-]*:(?:iam|sts)::(\d{12}):.*", principal)
    owner = provisioners._s3._bucket_owner_account(bucket)
    if not caller or principal == f"arn:aws:iam::{owner}:root":
        return ""  # the owner's root user (MiniStack's caller without credentials of its own)
    current = provisioners._s3._bucket_policies.get(bucket)
    if not current:
        return ""
    ctx = iam_evaluator.EvalContext(
        principal_arn=principal, principal_type="AssumedRole" if m else "User",
        principal_account=acct[1] if acct else "", action=action, resource_arn=f"arn:aws:s3:::{bucket}",
        region="", source_ip="", secure_transport=True,
        service_context={"aws:calledvia": ["cloudformation.amazonaws.com"],
                         "aws:calledviafirst": "cloudformation.amazonaws.com",
                         "aws:calledvialast": "cloudformation.amazonaws.com"})
    result = iam_evaluator.evaluate_resource_policy(current, ctx)
    if result.decision != "Deny":
        return ""
    return (f"User: {caller} is not authorized to perform: {action} on resource: \"arn:aws:s3:::{bucket}\" "
            f"with an explicit deny in a resource-based policy (Service: S3, Status Code: 403, Error Code: AccessDenied)")


def _guard_bucket_policy(handlers):
    """Wraps AWS::S3::BucketPolicy's create, update and delete with the bucket policy's check."""
    create, update, delete = handlers["create"], handlers["update"], handlers["delete"]

    def check(bucket, action):
        if bucket and (why := _bucket_policy_refusal(bucket, action)):
            raise PermissionError(why)

    def on_create(logical_id, props, stack_name, *rest):
        check(props.get("Bucket", ""), "s3:PutBucketPolicy")
        return create(logical_id, props, stack_name, *rest)

    def on_update(physical_id, old_props, new_props, stack_name, *rest):
        check(new_props.get("Bucket", ""), "s3:PutBucketPolicy")
        if old_props.get("Bucket") != new_props.get("Bucket"):
            check(old_props.get("Bucket", ""), "s3:DeleteBucketPolicy")
        return update(physical_id, old_props, new_props, stack_name, *rest)

    def on_delete(physical_id, props, *rest):
        check(props.get("Bucket", ""), "s3:DeleteBucketPolicy")
        return delete(physical_id, props, *rest)
    return {**handlers, "create": on_create, "update": on_update, "delete": on_delete}


_transform_params = threading.local()


def _wrap_apply_transforms(orig):
    def apply(template, provided_params=None, previous_params=None):
        _transform_params.values = engine._transform_parameters(template, provided_params, previous_params)
        try:
            return orig(template, provided_params, previous_params)
        finally:
            _transform_params.values = None
    return apply


def _wrap_sam_transform(orig):
    def transform(template, parameter_values, *args, **kw):
        values = dict(getattr(_transform_params, "values", None) or {})
        values.update(parameter_values or {})
        return orig(template, values, *args, **kw)
    return transform


_draining = threading.local()


def _wrap_invalidate(orig):
    """Check 10: the workers a call of invalidate_worker takes out of the pool drain."""
    def invalidate(*args, **kw):
        _draining.on = True
        try:
            return orig(*args, **kw)
        finally:
            _draining.on = False
    return invalidate


def _busy(worker):
    return worker.in_use or worker._lock.locked()


def _wrap_kill(orig):
    """Kills idle workers at once; under invalidate_worker, a busy one once its invocation ended."""
    def kill(workers):
        workers = [w for w in workers if w is not None]
        if not getattr(_draining, "on", False):
            return orig(workers)
        busy = [w for w in workers if _busy(w)]
        orig([w for w in workers if w not in busy])
        if busy:
            threading.Thread(target=_kill_when_done, args=(orig, busy), name="ministack-platform-drain", daemon=True).start()
    return kill


def _kill_when_done(kill, workers):
    timeout = max(float(w.config.get("Timeout", 3) or 3) for w in workers)
    deadline = time.monotonic() + timeout + 5
    while any(_busy(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    kill(workers)


def install():
    global _ENV_SEED
    _check()
    from samtranslator.translator import transform as sam_transform
    sam_transform.transform = _wrap_sam_transform(sam_transform.transform)
    apply = _wrap_apply_transforms(engine._apply_transforms)
    engine._apply_transforms = changesets._apply_transforms = handlers._apply_transforms = apply
    provisioners._cw_metric_alarm_record = _wrap_alarm_record(provisioners._cw_metric_alarm_record)
    cloudformation.handle_request = _wrap_cfn_request(cloudformation.handle_request)
    provisioners._RESOURCE_HANDLERS["AWS::S3::BucketPolicy"] = _guard_bucket_policy(
        provisioners._RESOURCE_HANDLERS["AWS::S3::BucketPolicy"])
    provisioners._RESOURCE_HANDLERS.setdefault("AWS::CloudWatch::CompositeAlarm", {
        "create": _composite_create, "update": _composite_update, "delete": _composite_delete})
    import secrets
    _ENV_SEED = secrets.token_hex(8)
    lambda_svc.new_uuid = _wrap_new_uuid(lambda_svc.new_uuid)
    lambda_svc._emit_lambda_logs = _wrap_emit_logs(lambda_svc._emit_lambda_logs)
    cloudwatch._evict_old_metrics = _wrap_evict(cloudwatch._evict_old_metrics)
    cloudwatch._evaluate_alarm = _evaluate_alarm
    cloudwatch._store_datum = _wrap_store_datum(cloudwatch._store_datum)
    threading.Thread(target=_evaluate_every_minute, args=(cloudwatch._evaluate_all_alarms,),
                     name="ministack-platform-alarms", daemon=True).start()
    cloudwatch._evaluate_all_alarms = _evaluate_put_alarms
    lambda_svc.acquire_worker = lambda_runtime.acquire_worker = _wrap_acquire_worker(lambda_runtime.acquire_worker)
    if "LAMBDA_ACCOUNT_CONCURRENCY" not in os.environ:
        lambda_svc._ACCOUNT_CONCURRENCY_CAP = _ACCOUNT_QUOTA
    lambda_svc.release_worker = lambda_runtime.release_worker = _wrap_release_worker(lambda_runtime.release_worker)
    _stream_poll[0] = lambda_svc._poll_dynamodb_streams
    lambda_svc._poll_dynamodb_streams = _streams_apart
    threading.Thread(target=_poll_streams_forever, name="ministack-platform-streams", daemon=True).start()
    lambda_svc._poll_sqs = _wrap_poll_sqs(lambda_svc._poll_sqs)
    lambda_runtime.kill_workers = _wrap_kill(lambda_runtime.kill_workers)
    lambda_runtime.invalidate_worker = lambda_svc.invalidate_worker = _wrap_invalidate(lambda_runtime.invalidate_worker)
    lambda_svc._execute_function = _wrap_execute(lambda_svc._execute_function)
    lambda_svc._emit_lambda_metrics = _wrap_emit(lambda_svc._emit_lambda_metrics)
    lambda_svc._send_ddb_stream_failure_record = _wrap_failure_record(lambda_svc._send_ddb_stream_failure_record)
    sqs._HANDLERS["SendMessage"] = _wrap_send(sqs._HANDLERS["SendMessage"], batch=False)
    sqs._HANDLERS["SendMessageBatch"] = _wrap_send(sqs._HANDLERS["SendMessageBatch"], batch=True)
    threading.Thread(target=_queue_gauges, name="ministack-platform-sqs-gauges", daemon=True).start()


def _selftest():
    """Checks 3 and 5 to 13 in this process, against MiniStack's own functions; exits non-zero naming
    what failed."""
    from ministack.services import cloudwatch_logs
    failed = []
    func = {"config": {"FunctionName": "selftest-fn", "Version": "$LATEST"}}
    for i in range(40):
        lambda_svc._emit_lambda_logs(func, f"req-{i}", "one line\nanother", False, 1)
    streams = cloudwatch_logs._log_groups["/aws/lambda/selftest-fn"]["streams"]
    if len(streams) != 1:
        failed.append(f"40 invocations one after the other wrote {len(streams)} log streams, want 1")
    if sum(len(s["events"]) for s in streams.values()) != 40 * 5:
        failed.append("the shared stream lost events")
    cloudwatch._evict_old_metrics()
    cloudwatch.record_metric("selftest", "M", 1.0, "Count", {"D": "a"})
    bucket = cloudwatch._metrics[("selftest", "M", cloudwatch._dims_key({"D": "a"}))]
    cloudwatch._evict_old_metrics()
    if cloudwatch._metrics[("selftest", "M", cloudwatch._dims_key({"D": "a"}))] is not bucket:
        failed.append("a second CloudWatch request rebuilt every metric's datapoints")
    now = time.time()
    bucket[:] = [{"Timestamp": now - 3600 + i, "Value": 100.0, "Unit": "Count", "Dimensions": {"D": "a"}} for i in range(1000)]
    bucket.append({"Timestamp": now - 10, "Value": 1.0, "Unit": "Count", "Dimensions": {"D": "a"}})
    alarm = {"AlarmName": "selftest-alarm", "Namespace": "selftest", "MetricName": "M", "Period": 60,
             "EvaluationPeriods": 1, "Statistic": "Sum", "Threshold": 5, "StateValue": "INSUFFICIENT_DATA",
             "ComparisonOperator": "GreaterThanOrEqualToThreshold", "ActionsEnabled": False}
    cloudwatch._evaluate_alarm(alarm)
    if alarm["StateValue"] != "OK":
        failed.append(f"alarm over the window's one datapoint (1 < 5): {alarm['StateValue']}, want OK")
    skipped = [i for (name, _span, _key), (_pts, i) in _cursors.items() if name == "selftest-alarm"]
    if skipped != [1000]:
        failed.append(f"the evaluation skips {skipped} datapoints before its window for good, want [1000]")
    bucket.append({"Timestamp": now - 5, "Value": 9.0, "Unit": "Count", "Dimensions": {"D": "a"}})
    cloudwatch._evaluate_alarm(alarm)
    if alarm["StateValue"] != "ALARM":
        failed.append(f"alarm after a breaching datapoint (10 >= 5): {alarm['StateValue']}, want ALARM")
    other = dict(alarm, AlarmName="selftest-other", MetricName="Other", StateValue="INSUFFICIENT_DATA")
    cloudwatch._alarms["selftest-other"] = other
    cloudwatch._alarms["selftest-alarm"] = dict(alarm, StateValue="INSUFFICIENT_DATA")
    evaluated, evaluate = [], cloudwatch._evaluate_alarm
    cloudwatch._evaluate_alarm = lambda a: (evaluated.append(a["AlarmName"]), evaluate(a))
    for _ in range(2):  # two PutMetricData of M within a second
        cloudwatch._store_datum("selftest", "M", {"D": "a"}, time.time(), "Count", 1.0, None, None, None)
        cloudwatch._evaluate_all_alarms()
    cloudwatch._evaluate_alarm = evaluate
    if evaluated != ["selftest-alarm"] or cloudwatch._alarms["selftest-alarm"]["StateValue"] != "ALARM":
        failed.append(f"two PutMetricData of one metric evaluated {evaluated}, want its alarm once (then ALARM)")
    sam = {"Transform": "AWS::Serverless-2016-10-31",
           "Parameters": {"Target": {"Type": "String", "Default": "aws"}},
           "Mappings": {"T": {"aws": {"On": True}, "emulator": {"On": False}}},
           "Resources": {"F": {"Type": "AWS::Serverless::Function", "Properties": {
               "CodeUri": "s3://b/k", "Runtime": "provided.al2023", "Handler": "bootstrap", "AutoPublishAlias": "live",
               "DeploymentPreference": {"Type": "AllAtOnce", "Enabled": {"Fn::FindInMap": ["T", {"Ref": "Target"}, "On"]}}}}}}
    for target, want in (("aws", True), ("emulator", False)):
        out = engine._apply_transforms(sam, [{"Key": "Target", "Value": target}])
        got = any(r.get("Type", "").startswith("AWS::CodeDeploy::") for r in out.get("Resources", {}).values())
        if got != want:
            failed.append(f"the SAM transform of a Target={target} stack made CodeDeploy resources: {got}, want {want}")
    failed += _selftest_bucket_policy()
    failed += _selftest_stream_apart()
    failed += _selftest_environments()
    failed += _selftest_queue_gauge()
    failed += _selftest_drain()
    failed += _selftest_yield()
    if failed:
        sys.exit("ministack_platform selftest: " + "; ".join(failed))
    print("ministack_platform selftest: ok")


def _selftest_yield():
    """Check 13: while an API call waits for an environment, the SQS mappings' poll and the stream
    thread take no batch, for _YIELD_MAX; then they poll once and yield again; an event source's
    own batch waiting holds nothing."""
    kinds = {}
    for name in ("ministack-esm", "ministack-platform-streams", "ministack-apigw-invoke"):
        t = threading.Thread(target=lambda n=name: kinds.setdefault(n, _synchronous()), name=name)
        t.start()
        t.join()
    failed = [f"an invocation on a {n} thread counts as synchronous: {got}"
              for n, got in kinds.items() if got != (n == "ministack-apigw-invoke")]
    calls, key = [], "selftest-yield"
    poll = _wrap_poll_sqs(lambda: calls.append(1) or True)
    with _env_lock:
        _env_waiters[key] = collections.deque([[threading.Event(), None, False]])
    poll()
    with _env_lock:
        _env_waiters[key].append([threading.Event(), None, True])
    poll()
    poll()
    streams_held = _yield_to_callers("streams")
    _held["sqs"] = _held.get("sqs", time.monotonic()) - _YIELD_MAX
    poll()
    poll()
    with _env_lock:
        del _env_waiters[key]
    poll()
    _held.clear()
    if calls != [1, 1, 1] or not streams_held:
        failed.append(f"SQS polls taken {len(calls)} of 6 (want 3: a batch waiting, after {_YIELD_MAX:g} s "
                      f"yielding, none waiting); the stream thread yielded: {streams_held}, want True")
    return failed


def _selftest_queue_gauge():
    """Check 3's gauges: one visible, one delayed and one in-flight message."""
    now = time.time()
    q = {"messages": [{"visible_at": now - 1, "sent_at": now - 30, "receive_count": 0},
                      {"visible_at": now + 60, "sent_at": now - 5, "receive_count": 0},
                      {"visible_at": now + 20, "sent_at": now - 10, "receive_count": 1}]}
    _queue_gauge(q, "selftest-queue", now)
    failed = []
    for metric, want in (("ApproximateNumberOfMessagesVisible", 1), ("ApproximateNumberOfMessagesDelayed", 1),
                         ("ApproximateAgeOfOldestMessage", 30)):
        pts = cloudwatch._metrics.get(("AWS/SQS", metric, cloudwatch._dims_key({"QueueName": "selftest-queue"})), [])
        if not pts or pts[-1]["Value"] != want:
            failed.append(f"queue gauge {metric}: {[p['Value'] for p in pts]}, want {want}")
    return failed


def _selftest_bucket_policy():
    """Check 9: a stack operation of another principal than the one the bucket's policy exempts
    is refused a policy change; the exempt role's and the root user's are not."""
    from ministack.services import s3
    failed, bucket = [], "selftest-archive"
    s3._buckets[bucket] = {"name": bucket, "created": "2026-01-01T00:00:00.000Z", "objects": {}}
    s3._bucket_policies[bucket] = json.dumps({"Version": "2012-10-17", "Statement": [{
        "Sid": "TheProtectionsStay", "Effect": "Deny", "Principal": "*",
        "Action": ["s3:PutBucketPolicy", "s3:DeleteBucketPolicy"], "Resource": f"arn:aws:s3:::{bucket}",
        "Condition": {"ArnNotEquals": {"aws:PrincipalArn": "arn:aws:iam::000000000000:role/deployer"}}}]})
    handlers = provisioners._RESOURCE_HANDLERS["AWS::S3::BucketPolicy"]
    doc = {"Version": "2012-10-17", "Statement": []}
    for caller, want in [("arn:aws:sts::000000000000:assumed-role/intruder/s", False), ("arn:aws:iam::000000000000:user/intruder", False),
                         ("arn:aws:sts::000000000000:assumed-role/deployer/s", True), ("arn:aws:iam::000000000000:root", True)]:
        token = _stack_caller.set(caller)
        before = s3._bucket_policies.get(bucket)
        for op, call in [("create", lambda: handlers["create"]("P", {"Bucket": bucket, "PolicyDocument": doc}, "other")),
                         ("delete", lambda: handlers["delete"](f"{bucket}-policy", {"Bucket": bucket}))]:
            try:
                call()
                done = True
            except PermissionError:
                done = False
            if done != want:
                failed.append(f"a stack of {caller}: policy {op} {'done' if done else 'refused'}, want {'done' if want else 'refused'}")
            s3._bucket_policies[bucket] = before
        _stack_caller.reset(token)
    return failed


def _selftest_environments():
    """Check 12: a function's invocations beyond _ENVS_PER_FUNCTION wait for a free environment
    and get the released ones in the order they came, instead of starting more (environments
    are only leased here, never started)."""
    config = {"FunctionName": "selftest-envs", "Runtime": "provided.al2023", "Version": "$LATEST",
              "FunctionArn": "arn:aws:lambda:us-east-1:000000000000:function:selftest-envs"}
    leased = [lambda_svc.acquire_worker("selftest-envs", config, b"")[0] for _ in range(_ENVS_PER_FUNCTION)]
    got, waiters = {}, []
    running = lambda_svc._inflight_total = 20  # as if MiniStack had counted 20, the waiters among them
    for name in ("first", "second"):
        waiters.append(threading.Thread(target=lambda n=name: got.setdefault(n, lambda_svc.acquire_worker("selftest-envs", config, b"")[0]),
                                        daemon=True))
        waiters[-1].start()
        time.sleep(0.3)
    failed, tries = [], _env_tries[0]
    time.sleep(1.5)
    if lambda_svc._inflight_total != running - 2:
        failed.append(f"with two invocations waiting the account counts {lambda_svc._inflight_total} running, want {running - 2}")
    if _env_tries[0] != tries:
        failed.append(f"two waiting invocations tried {_env_tries[0] - tries} leases in 1.5 s with none released, want 0")
    if got:
        failed.append(f"{sorted(got)} got an environment at once while all {_ENVS_PER_FUNCTION} were busy")
    lambda_svc.release_worker(leased[3])
    waiters[0].join(3)
    lambda_svc.release_worker(leased[5])
    waiters[1].join(3)
    if got.get("first") is not leased[3] or got.get("second") is not leased[5]:
        failed.append("the waiting invocations did not get the environments released, first come first served")
    if lambda_svc._inflight_total != running:
        failed.append(f"once the waiters had environments the account counts {lambda_svc._inflight_total} running, want {running}")
    lambda_svc._inflight_total = 0
    if lambda_svc._ACCOUNT_CONCURRENCY_CAP != int(os.environ.get("LAMBDA_ACCOUNT_CONCURRENCY", _ACCOUNT_QUOTA)):
        failed.append(f"the account's concurrency quota is {lambda_svc._ACCOUNT_CONCURRENCY_CAP}, want {_ACCOUNT_QUOTA} (AWS's default)")
    pool = lambda_runtime._workers.get(lambda_runtime._worker_key("selftest-envs", config, "$LATEST"), [])
    if len(pool) != _ENVS_PER_FUNCTION:
        failed.append(f"the function has {len(pool)} environments, want {_ENVS_PER_FUNCTION}")
    return failed


def _selftest_stream_apart():
    """Check 11: while a stream mapping's batch runs (held here for 3 s, in the lookup of its
    function), MiniStack's poll thread goes on polling the queues."""
    held, polls = threading.Event(), []
    get_func, poll_sqs = lambda_svc._get_func_record_for_qualifier, lambda_svc._poll_sqs

    def slow_get_func(name, qualifier):
        if name != "selftest-stream-fn":
            return get_func(name, qualifier)
        held.set()
        time.sleep(3)
        return None, None
    lambda_svc._get_func_record_for_qualifier = slow_get_func
    lambda_svc._poll_sqs = lambda: (polls.append(time.time()), poll_sqs())[1]
    lambda_svc._esms._data[("000000000000", "us-east-1", "selftest-stream")] = {
        "UUID": "selftest-stream", "FunctionName": "selftest-stream-fn", "Enabled": True,
        "EventSourceArn": "arn:aws:dynamodb:us-east-1:000000000000:table/selftest/stream/2026-01-01T00:00:00.000"}
    threading.Thread(target=lambda_svc._poll_loop, daemon=True).start()
    try:
        if not held.wait(5):
            return ["no stream poller looked the stream mapping's function up within 5 s"]
        since = time.time()
        for _ in range(20):  # a queue gaining work each 0.1 s wakes the poll thread
            lambda_svc._esm_wake.set()
            time.sleep(0.1)
        n = sum(1 for t in polls if t > since)
        return [] if n >= 5 else [f"the queues were polled {n} times in the 2 s a stream batch ran, want at least 5"]
    finally:
        lambda_svc._get_func_record_for_qualifier, lambda_svc._poll_sqs = get_func, poll_sqs


def _selftest_drain():
    """Check 10: a deploy's invalidation stops an idle worker at once and a busy one only once
    its invocation ended."""
    import subprocess

    class _Worker:
        def __init__(self, in_use):
            self.in_use, self._lock, self.config = in_use, threading.Lock(), {"Timeout": 30}
            self._proc = subprocess.Popen(["sleep", "60"])

        def _discard_tmpdir(self):
            pass

    failed, busy, idle = [], _Worker(True), _Worker(False)
    procs = (busy._proc, idle._proc)
    lambda_runtime._workers["000000000000:us-east-1:selftest-drain:$LATEST"] = [busy, idle]
    lambda_svc.invalidate_worker("selftest-drain", qualifier="$LATEST")
    if procs[1].poll() is None:
        failed.append("an idle worker outlived the update of its function")
    time.sleep(0.3)
    if procs[0].poll() is not None:
        failed.append("the update of a function killed the invocation it was running")
    busy.in_use = False
    for _ in range(100):
        if procs[0].poll() is not None:
            break
        time.sleep(0.05)
    else:
        failed.append("a worker whose invocation ended was not stopped")
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return failed


if __name__ == "__main__":
    install()
    if sys.argv[1:] == ["--selftest"]:
        _selftest()
        sys.exit(0)
    from ministack.app import main
    sys.argv[0] = "ministack"
    sys.exit(main())
