from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("orders", "0001_initial"),
    ]

    operations = [
        # Tokens made before scopes could do all their user could: they keep that ("act"); new ones read.
        migrations.AddField(
            model_name="apitoken",
            name="scope",
            field=models.CharField(choices=[("read", "read only"), ("act", "read and act")], default="act",
                                   max_length=8),
            preserve_default=False,
        ),
        migrations.AlterField(
            model_name="apitoken",
            name="scope",
            field=models.CharField(choices=[("read", "read only"), ("act", "read and act")], default="read",
                                   max_length=8),
        ),
        migrations.AddField(
            model_name="apitoken",
            name="expires_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
