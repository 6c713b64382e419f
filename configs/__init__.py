"""The shipped sweep configs (YAML), found by name: `normbench run quick`."""
