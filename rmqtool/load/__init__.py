"""The one bulk write path: input rows -> records checked by the rules -> a plan -> the engine or a staging folder."""
