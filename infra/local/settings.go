package main

import (
	"fmt"
	"strings"

	"github.com/resetnotify/resetnotify/infra/samtemplate"
	"github.com/resetnotify/resetnotify/shared/config"
)

// settings are what the local stack takes from template.yaml instead of copying it: the
// queues' attributes and redrive policies, each function's timeout and memory, the event
// source mappings' batch sizes, windows and retries, and the sweeper's and digest step's
// schedules, and intake's country allow-list.
type settings struct {
	queues []samtemplate.Queue
	// functions are by local name, the folder under functions/ (intake, provider-events).
	functions                               map[string]samtemplate.Function
	dispatch, reconcile, audit, auditReplay samtemplate.Source
	sweep, digest                           samtemplate.Source
	// allowedCountries is the intake function's ALLOWED_COUNTRIES as the template sets it
	// (the AllowedCountries parameter's default).
	allowedCountries string
	// hotDays and retentionDays are the AuditHotDays and AuditRetentionDays parameters'
	// defaults: the audit writers' hot window and the archive bucket's default retention.
	hotDays, retentionDays string
}

// loadSettings reads the settings from the SAM template at path, and each function's folder
// from the Makefile's build-<LogicalId> lines (makefile), as `sam build` finds it.
func loadSettings(path, makefile string) (settings, error) {
	tpl, err := samtemplate.Load(path)
	if err != nil {
		return settings{}, err
	}
	st := settings{}
	if st.functions, err = functionsByFolder(tpl, makefile); err != nil {
		return settings{}, err
	}
	if st.queues, err = tpl.Queues(); err != nil {
		return settings{}, err
	}
	if st.allowedCountries, err = intakeVar(tpl, config.EnvAllowedCountries); err != nil {
		return settings{}, err
	}
	if st.hotDays, err = tpl.Param("AuditHotDays"); err != nil {
		return settings{}, err
	}
	if st.retentionDays, err = tpl.Param("AuditRetentionDays"); err != nil {
		return settings{}, err
	}
	sources, err := tpl.Sources()
	if err != nil {
		return settings{}, err
	}
	found := map[string]bool{}
	for _, src := range sources {
		var dst *samtemplate.Source
		switch {
		case src.Function == "DispatchFunction" && src.Type == "SQS" && src.Resource == "DispatchQueue":
			dst = &st.dispatch
		case src.Function == "ReconcileFunction" && src.Type == "SQS" && src.Resource == "ReconcileQueue":
			dst = &st.reconcile
		case src.Function == "AuditFunction" && src.Type == "DynamoDB" && src.Resource == "NotificationsTable":
			dst = &st.audit
		case src.Function == "AuditReplayFunction" && src.Type == "SQS" && src.Resource == "AuditFailureQueue":
			dst = &st.auditReplay
		case src.Function == "SweeperFunction" && src.Type == "Schedule":
			dst = &st.sweep
		case src.Function == "DigestFunction" && src.Type == "Schedule":
			dst = &st.digest
		default:
			continue
		}
		if src.Type == "SQS" && src.Window > 0 {
			return settings{}, fmt.Errorf("%s.%s: infra/local does not emulate an SQS batching window", src.Function, src.Event)
		}
		*dst = src
		found[src.Function] = true
	}
	for _, fn := range []string{"DispatchFunction", "ReconcileFunction", "AuditFunction", "AuditReplayFunction", "SweeperFunction", "DigestFunction"} {
		if !found[fn] {
			return settings{}, fmt.Errorf("%s: template.yaml declares no event source infra/local knows for it", fn)
		}
	}
	return st, nil
}

// intakeVar returns the value template.yaml gives the intake function's variable name.
func intakeVar(tpl *samtemplate.Template, name string) (string, error) {
	env, _ := tpl.Resources["IntakeFunction"].Properties["Environment"].(map[string]any)
	vars, _ := env["Variables"].(map[string]any)
	v, ok := vars[name]
	if !ok {
		return "", fmt.Errorf("IntakeFunction: template.yaml sets no %s", name)
	}
	s, err := tpl.String(v)
	if err != nil {
		return "", fmt.Errorf("IntakeFunction %s: %w", name, err)
	}
	return s, nil
}

// functionsByFolder returns the template's functions by their folder under functions/, as the
// Makefile's build-<LogicalId> lines name it. The local stack runs each folder once: where two
// functions share one (the simulator's webhook runs provider-events), the first in
// template.yaml gives it its timeout and memory.
func functionsByFolder(tpl *samtemplate.Template, makefile string) (map[string]samtemplate.Function, error) {
	folders, err := samtemplate.FunctionFolders(makefile)
	if err != nil {
		return nil, err
	}
	fns := map[string]samtemplate.Function{}
	for _, id := range tpl.Of("AWS::Serverless::Function") {
		fn, err := tpl.Function(id)
		if err != nil {
			return nil, err
		}
		dir, ok := strings.CutPrefix(folders[id], "functions/")
		if !ok {
			return nil, fmt.Errorf("%s: the Makefile names no functions/<name> folder for it (build-%s)", id, id)
		}
		if _, taken := fns[dir]; !taken {
			fns[dir] = fn
		}
	}
	return fns, nil
}
