"""sam-expand.py TEMPLATE prints the CloudFormation JSON that the SAM transform (the
aws-sam-translator that cfn-lint installs in .tools/venv) makes of TEMPLATE, for tests that
compare what SAM would deploy with what the local stack serves. CodeUri becomes a placeholder
S3 URI, as sam package would make it; managed policies are not looked up."""
import json
import os
import sys

from cfnlint.decode import decode
from samtranslator.translator.transform import transform


class NoManagedPolicies:
    def load(self):
        return {}


def main():
    template, errors = decode(sys.argv[1])
    if errors:
        sys.exit("sam-expand: %s" % errors)
    template = json.loads(json.dumps(template))
    for resource in template.get("Resources", {}).values():
        if resource.get("Type") == "AWS::Serverless::Function":
            resource.setdefault("Properties", {})["CodeUri"] = "s3://bucket/code.zip"
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    json.dump(transform(template, {}, NoManagedPolicies()), sys.stdout, indent=1)


if __name__ == "__main__":
    main()
