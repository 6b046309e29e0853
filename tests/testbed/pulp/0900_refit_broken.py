# The broken build's own migration: a table the previous release does not know, so a restore
# that leaves it behind shows.
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("core", "0161_upstreampulp_remote_policy")]

    operations = [
        migrations.CreateModel(
            name="RefitBroken",
            fields=[("id", models.AutoField(primary_key=True)), ("note", models.TextField())],
        ),
    ]
