"""A task file that is only a docstring: it defines no Model, get_inputs or get_init_inputs."""
