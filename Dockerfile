# calmon: one image for every role (`calmon serve`, `calmon worker`, `calmon migrate`).
#
# The builder installs calmon and its dependencies into a virtualenv at /opt/venv; the runtime
# copies that virtualenv and the source tree to the same paths, without pip's caches or build
# tools. calmon is installed in editable mode because `calmon migrate` finds its Alembic scripts
# beside the app package (app/db/migrate.py), which a wheel in site-packages would not have.

FROM python:3.11-slim-bookworm AS builder
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /opt/calmon
# Dependencies first, so a source change does not reinstall numpy and friends.
COPY pyproject.toml README.md LICENSE ./
RUN mkdir app && touch app/__init__.py && pip install . && pip uninstall -y calmon
COPY app ./app
COPY migrations ./migrations
RUN pip install --no-deps -e . && python -c "import app.cli"

FROM python:3.11-slim-bookworm AS runtime
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    CALMON_HOST=0.0.0.0 \
    CALMON_PORT=8000 \
    CALMON_DATA_DIR=/var/lib/calmon
RUN useradd --system --uid 10001 --home-dir /var/lib/calmon --create-home calmon
COPY --from=builder /opt/venv /opt/venv
COPY --from=builder /opt/calmon /opt/calmon
WORKDIR /var/lib/calmon
USER 10001
EXPOSE 8000
# Liveness of `calmon serve`; the standard library is enough, so the image needs no curl.
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('CALMON_PORT', '8000'), timeout=4)"]
ENTRYPOINT ["calmon"]
CMD ["serve"]
