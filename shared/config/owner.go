package config

import "github.com/resetnotify/resetnotify/shared/notify"

// EnvOperatorPrincipalARN names the one principal (a role, user or root ARN) that may read
// every notification's status whoever admitted it (template parameter OperatorPrincipalArn);
// unset, every caller reads only its own. Intake only.
const EnvOperatorPrincipalARN = "OPERATOR_PRINCIPAL_ARN"

// operator returns OPERATOR_PRINCIPAL_ARN in canonical form (notify.CanonicalPrincipal), ""
// when unset, and a problem when it names no principal.
func (r *reader) operator() string {
	v := r.get(EnvOperatorPrincipalARN)
	if v == "" {
		return ""
	}
	p, err := notify.CanonicalPrincipal(v)
	if err != nil {
		r.problem(EnvOperatorPrincipalARN, "must be the ARN of a role, user or account root (arn:aws:iam::<account>:role/<name>)")
	}
	return p
}
