#!/usr/bin/env python3
"""expand-template.py prints template.yaml as SAM expands it, as CloudFormation JSON.

Usage: expand-template.py TEMPLATE [Name=Value ...]

It runs aws-sam-translator (the library `sam build`/`sam deploy` and cfn-lint use) offline:
no AWS call is made. The policy loader knows no managed policies, so a template whose
functions still named SAM policy templates or managed policies by name would fail here,
which is what the IAM test wants. Parameter overrides choose a variant of the stack (e.g.
SmsProviders=simulator).
"""
import json
import os
import sys

from samtranslator.parser.parser import Parser
from samtranslator.translator.translator import Translator
from samtranslator.yaml_helper import yaml_parse


class NoManagedPolicies:
    """A managed-policy loader that knows none, so nothing is looked up in AWS."""

    def load(self):
        return {}


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        template = yaml_parse(f.read())
    # The translator asks the environment for a region; none is ever called.
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    # What `sam package` does before the transform: local code becomes an S3 location.
    for res in template.get("Resources", {}).values():
        props = res.get("Properties") or {}
        if res.get("Type") == "AWS::Serverless::Function" and isinstance(props.get("CodeUri"), str):
            props["CodeUri"] = "s3://bucket/" + props["CodeUri"].strip("./") + "code.zip"
    params = dict(arg.split("=", 1) for arg in argv[2:])
    params.setdefault("AWS::Region", "us-east-1")
    params.setdefault("AWS::Partition", "aws")
    params.setdefault("AWS::AccountId", "123456789012")
    translator = Translator(NoManagedPolicies(), Parser())
    out = translator.translate(sam_template=template, parameter_values=params)
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
