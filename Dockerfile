# One image for every kubesim component (apiserver, controller-manager, scheduler, kubelet_sim, metrics_server,
# the web page).
# It installs the project the way the Makefile does: a virtual environment in .venv, `pip install -e .`.
FROM python:3.11-slim

WORKDIR /app
ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/app/.venv/bin:$PATH

COPY pyproject.toml README.md ./
COPY apiserver ./apiserver
COPY machinery ./machinery
COPY controller_manager ./controller_manager
COPY scheduler ./scheduler
COPY scheduler_plugins ./scheduler_plugins
COPY kubelet_sim ./kubelet_sim
COPY metrics_server ./metrics_server
COPY kubesim ./kubesim

RUN python3 -m venv .venv \
    && .venv/bin/python -m pip install --quiet --upgrade pip \
    && .venv/bin/python -m pip install --quiet -e .

# Components run as an unprivileged user; ports are chosen by docker-compose.yml. /kubesim is where the
# cluster's certificates, kubeconfigs and audit log go (a volume in docker-compose.yml, owned by that user).
RUN useradd --create-home --uid 10001 kubesim && mkdir /kubesim && chown kubesim /kubesim
USER kubesim

CMD ["python", "-m", "apiserver", "--help"]
