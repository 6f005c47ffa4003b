"""Import every built-in plugin module so its `@register` decorators run."""

from . import checks as _checks  # noqa: F401
from . import generators as _generators  # noqa: F401
from . import sandbox as _sandbox  # noqa: F401
from . import agent as _agent  # noqa: F401
from . import policy as _policy  # noqa: F401
