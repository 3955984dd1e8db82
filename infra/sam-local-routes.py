"""sam-local-routes.py TEMPLATE prints, one per line as "METHOD PATH FUNCTION", the routes that
`sam local start-api` would serve for TEMPLATE: it asks the SAM CLI's own API provider (the
code start-api uses), so it needs the SAM CLI's virtualenv (.tools/sam) but no Docker."""
import sys

from samcli.lib.providers.api_provider import ApiProvider
from samcli.lib.providers.sam_stack_provider import SamLocalStackProvider


def main():
    stacks, _ = SamLocalStackProvider.get_stacks(sys.argv[1])
    routes = set()
    for api in ApiProvider(stacks).get_all():
        for route in api.routes:
            for method in route.methods:
                routes.add("%s %s %s" % (method, route.path, route.function_name))
    for line in sorted(routes):
        print(line)


if __name__ == "__main__":
    main()
