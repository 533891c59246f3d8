"""Tiny randomly initialised Grounding DINO and SAM, built from configs offline.

For tests of :mod:`perceptbench.external.grounding`: transformers' own classes
(``GroundingDinoForObjectDetection`` + ``GroundingDinoProcessor``, ``SamModel`` +
``SamProcessor``) at a few hundred thousand parameters, with a fixed torch seed.  Grounding
DINO's BERT text side gets a WordPiece tokenizer built in process from a small vocabulary
(special tokens, punctuation, single characters and their ``##`` continuations, so every
lower-case ASCII phrase tokenizes without [UNK]).  Their boxes and masks are meaningless but
deterministic and have the real output shapes.

Requires torch and transformers>=5.
"""

from __future__ import annotations

import string

__all__ = ["tiny_wordpiece_tokenizer", "build_tiny_grounding_dino", "build_tiny_sam"]

_WORDS = ["the", "a", "dog", "cat", "red", "square", "circle", "person", "table"]


def tiny_wordpiece_tokenizer():
    """A ``BertTokenizer`` (lower-casing WordPiece) over a ~100-token in-process vocabulary."""
    from transformers import BertTokenizer

    chars = list(string.ascii_lowercase + string.digits)
    vocab = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(".,?!'-") + chars
             + ["##" + c for c in chars] + [w for w in _WORDS if w not in chars])
    return BertTokenizer(vocab={t: i for i, t in enumerate(vocab)}, do_lower_case=True)


def build_tiny_grounding_dino(seed: int = 0, image_edge: int = 64):
    """A :class:`perceptbench.external.grounding.Detector` around a tiny random Grounding DINO.

    Swin backbone (embed 16, one block per stage), BERT text encoder (hidden 32, one layer),
    d_model 32, 1 encoder / 2 decoder layers (two: the box heads are tied across decoder
    layers), 20 queries; the image processor resizes the shorter edge to ``image_edge``.
    """
    import torch
    from transformers import (BertConfig, GroundingDinoConfig, GroundingDinoForObjectDetection,
                              GroundingDinoImageProcessor, GroundingDinoProcessor, SwinConfig)

    from ..external.grounding import Detector

    tok = tiny_wordpiece_tokenizer()
    torch.manual_seed(seed)
    cfg = GroundingDinoConfig(
        backbone_config=SwinConfig(embed_dim=16, depths=[1, 1, 1, 1], num_heads=[1, 1, 2, 2], window_size=4,
                                   image_size=image_edge, out_features=["stage2", "stage3", "stage4"]),
        text_config=BertConfig(vocab_size=len(tok.get_vocab()), hidden_size=32, num_hidden_layers=1,
                               num_attention_heads=2, intermediate_size=64, max_position_embeddings=64),
        d_model=32, encoder_layers=1, decoder_layers=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
        encoder_attention_heads=2, decoder_attention_heads=2, num_queries=20, max_text_len=32,
        encoder_n_points=2, decoder_n_points=2)
    model = GroundingDinoForObjectDetection(cfg).eval()
    proc = GroundingDinoProcessor(
        image_processor=GroundingDinoImageProcessor(size={"shortest_edge": image_edge, "longest_edge": 2 * image_edge}),
        tokenizer=tok)
    return Detector(model, proc, name=f"tiny-random-grounding-dino(seed={seed})")


def build_tiny_sam(seed: int = 0, image_edge: int = 64):
    """A :class:`perceptbench.external.grounding.Segmenter` around a tiny random SAM
    (ViT hidden 32, one layer, patch 16 on a ``image_edge``-pixel padded input)."""
    import torch
    from transformers import (SamConfig, SamImageProcessor, SamMaskDecoderConfig, SamModel, SamProcessor,
                              SamPromptEncoderConfig, SamVisionConfig)

    from ..external.grounding import Segmenter

    torch.manual_seed(seed)
    cfg = SamConfig(
        vision_config=SamVisionConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, mlp_dim=64,
                                      image_size=image_edge, patch_size=16, output_channels=32, window_size=2,
                                      global_attn_indexes=[0], num_pos_feats=16),
        prompt_encoder_config=SamPromptEncoderConfig(hidden_size=32, image_size=image_edge, patch_size=16,
                                                     mask_input_channels=4),
        mask_decoder_config=SamMaskDecoderConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                                 mlp_dim=64, iou_head_hidden_dim=32))
    model = SamModel(cfg).eval()
    side = image_edge // 4
    proc = SamProcessor(image_processor=SamImageProcessor(
        size={"longest_edge": image_edge}, pad_size={"height": image_edge, "width": image_edge},
        mask_size={"longest_edge": side}, mask_pad_size={"height": side, "width": side}))
    return Segmenter(model, proc, name=f"tiny-random-sam(seed={seed})")
