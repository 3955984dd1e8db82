// Package policycheck tests template.yaml as SAM deploys it: its tests expand the template
// with aws-sam-translator (infra/expand-template.py, run from the project's virtualenv) and
// walk every IAM policy of the expanded stack, so what is checked is what CloudFormation
// would create, implicit resources included. It holds no code a Lambda links.
package policycheck
