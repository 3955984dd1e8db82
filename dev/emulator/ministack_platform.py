"""Runs MiniStack with three parts of the AWS platform that it leaves out and that resetnotify's
emulator stacks (make emulator-e2e, make gameday) rely on.

Dev only: infra/emulator.sh starts this file with MiniStack's own Python in place of the
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
   ApproximateNumberOfMessagesVisible and ApproximateAgeOfOldestMessage.
4. The template's burn-rate pages. MiniStack's CloudFormation refuses an AWS::CloudWatch::Alarm
   with Metrics (metric math) and has no AWS::CloudWatch::CompositeAlarm. Here a math alarm is
   stored with its Metrics (DescribeAlarms returns them; MiniStack's own evaluator skips an
   alarm with no MetricName) and a composite alarm goes through MiniStack's PutCompositeAlarm,
   so the stack deploys as on AWS and dev/alarmeval evaluates both.
"""

import sys
import threading
import time

from ministack.services import cloudwatch, lambda_svc, sqs
from ministack.services.cloudformation import provisioners

# Each internal this file wraps or reads; checked before anything starts.
_NEEDED = {
    lambda_svc: ["_execute_function", "_emit_lambda_metrics", "_iter_all_esms",
                 "_send_ddb_stream_failure_record", "_request_account_id"],
    sqs: ["_HANDLERS", "_queues"],
    cloudwatch: ["record_metric", "_put_composite_alarm", "cloudformation_delete_metric_alarm", "_composite_alarms"],
    provisioners: ["_cw_metric_alarm_record", "_RESOURCE_HANDLERS", "_physical_name"],
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
                msgs = list(q.get("messages", []))
                name = _queue_name((q.get("attributes") or {}).get("QueueArn") or q.get("name") or key)
                visible = sum(1 for m in msgs if m.get("visible_at", now) <= now)
                oldest = max((now - m.get("sent_at", now) for m in msgs), default=0.0)
                _metric("AWS/SQS", "ApproximateNumberOfMessagesVisible", visible, "Count", {"QueueName": name})
                _metric("AWS/SQS", "ApproximateAgeOfOldestMessage", round(oldest), "Seconds", {"QueueName": name})
            except Exception:
                pass
            finally:
                if token is not None:
                    lambda_svc._request_account_id.reset(token)


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


def install():
    _check()
    provisioners._cw_metric_alarm_record = _wrap_alarm_record(provisioners._cw_metric_alarm_record)
    provisioners._RESOURCE_HANDLERS.setdefault("AWS::CloudWatch::CompositeAlarm", {
        "create": _composite_create, "update": _composite_update, "delete": _composite_delete})
    lambda_svc._execute_function = _wrap_execute(lambda_svc._execute_function)
    lambda_svc._emit_lambda_metrics = _wrap_emit(lambda_svc._emit_lambda_metrics)
    lambda_svc._send_ddb_stream_failure_record = _wrap_failure_record(lambda_svc._send_ddb_stream_failure_record)
    sqs._HANDLERS["SendMessage"] = _wrap_send(sqs._HANDLERS["SendMessage"], batch=False)
    sqs._HANDLERS["SendMessageBatch"] = _wrap_send(sqs._HANDLERS["SendMessageBatch"], batch=True)
    threading.Thread(target=_queue_gauges, name="ministack-platform-sqs-gauges", daemon=True).start()


if __name__ == "__main__":
    install()
    from ministack.app import main
    sys.argv[0] = "ministack"
    sys.exit(main())
