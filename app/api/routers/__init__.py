"""HTTP routers; app.api.app.create_app includes each of them."""
