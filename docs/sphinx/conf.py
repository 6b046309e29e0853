# Sphinx settings for refit.containers' docsite, built by `make docs` (tools/docs.sh) from the
# pages antsibull-docs writes. Started from `antsibull-docs sphinx-init`; intersphinx is left out,
# since its inventories live on hosts this build must not need, and ansible_links.rst resolves
# the few references antsibull-docs makes into Ansible's own docs.
project = "refit.containers"
copyright = "refit developers"
title = "refit.containers"
html_short_title = "refit.containers"
extensions = ["sphinx.ext.autodoc", "sphinx_antsibull_ext"]
pygments_style = "ansible"
highlight_language = "YAML+Jinja"
html_theme = "sphinx_ansible_theme"
html_show_sphinx = False
display_version = False
html_use_smartypants = True
html_use_modindex = False
html_use_index = False
html_copy_source = False
default_role = "any"
nitpicky = True
