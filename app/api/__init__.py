"""HTTP layer: app factory, dependencies, error rendering and routers."""
