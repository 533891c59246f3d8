"""Geirhos et al. (2019) edge stimuli (line drawings), the raw trials of their 10 observers and
the paper's own CNN trials on them.

Source: ``geirhos2019-edges`` (rgeirhos/texture-vs-shape@ccd0c01).  160 images, 16 classes x 10,
224 x 224 px.  Stimulus ids are ``edge_<class><n>`` for ``stimuli/edges/<class>/<class><n>.png``.
Published models (the paper, §2 and Fig. 2; ``data-analysis/data-analysis.R`` reads the same
files): AlexNet, GoogLeNet and VGG-16 (caffe, ImageNet-trained; files
``raw-data/edge-experiment/edge-experiment_{alexnet,googlenet,vgg}_session_1.csv``), ResNet-50
(torchvision, ImageNet-trained) and ResNet-50 trained on Stylized-ImageNet for 60 epochs (the
release's ``model_A``), both in ``raw-data/edge-experiment-trained-CNNs/``.
"""

from __future__ import annotations

from .geirhos import GeirhosExperiment, PublishedModel

_RAW = "texture-vs-shape/raw-data/edge-experiment"

EXPERIMENT = GeirhosExperiment("geirhos2019-edges", "edges", "edge-experiment", "edge_", published=(
    PublishedModel("alexnet", f"{_RAW}/edge-experiment_alexnet_session_1.csv", "AlexNet, ImageNet-trained (caffe)"),
    PublishedModel("googlenet", f"{_RAW}/edge-experiment_googlenet_session_1.csv",
                   "GoogLeNet, ImageNet-trained (caffe)"),
    PublishedModel("vgg16", f"{_RAW}/edge-experiment_vgg_session_1.csv", "VGG-16, ImageNet-trained (caffe)"),
    PublishedModel("resnet50", f"{_RAW}-trained-CNNs/edge-experiment_resnet50_session-1.csv",
                   "ResNet-50, ImageNet-trained (torchvision)"),
    PublishedModel("resnet50-sin", f"{_RAW}-trained-CNNs/edge-experiment_resnet50_train_60_epochs_session-1.csv",
                   "ResNet-50 trained on Stylized-ImageNet, 60 epochs (the release's model_A)"),
))
"""The edge experiment and its five published models."""
