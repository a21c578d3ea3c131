"""Structured outputs against the bundled mock gateway: a reply parsed into a pydantic model."""

from pydantic import BaseModel

from aigateway import StructuredOutputError, pydantic_function_tool
from aigateway.testing import MockGateway


class Ingredient(BaseModel):
    name: str
    grams: int


class Recipe(BaseModel):
    """A recipe: a title and what goes in it."""

    title: str
    servings: int
    ingredients: list[Ingredient]


class Convert(BaseModel):
    """Convert an amount between units."""

    amount: float
    unit: str


def main() -> None:
    gateway = MockGateway(seed=42)
    with gateway.client() as client:
        completion = client.chat.completions.parse(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "A recipe for pancakes."}],
            response_format=Recipe,
        )
        recipe = completion.choices[0].message.parsed
        assert isinstance(recipe, Recipe)
        print(recipe.title, "for", recipe.servings)
        for ingredient in recipe.ingredients:
            print(f"  {ingredient.grams} g {ingredient.name}")

        tools = client.chat.completions.parse(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "How much is 2 cups in grams?"}],
            tools=[pydantic_function_tool(Convert)],
            tool_choice="required",
        )
        call = (tools.choices[0].message.tool_calls or [])[0]
        print("tool call:", call.function.name, call.function.parsed_arguments)

        gateway.enqueue_reply("Sorry, here is some prose instead.")
        try:
            client.chat.completions.parse(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": "Another recipe."}],
                response_format=Recipe,
            )
        except StructuredOutputError as error:
            print("not a recipe:", error.text)


if __name__ == "__main__":
    main()
