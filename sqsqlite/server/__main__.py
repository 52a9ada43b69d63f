"""``python -m sqsqlite.server``: the serve command on its own (same options as ``sqsqlite serve``)."""

from .command import serve

if __name__ == "__main__":
    serve(prog_name="sqsqlite serve")
